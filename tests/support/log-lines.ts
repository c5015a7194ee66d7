// Reading the services' JSON log lines out of `pnpm stack`'s output.

/** The keys of a JSON object's top level, repeats kept (JSON.parse keeps only the last). */
export function topLevelKeys(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '"') {
      let j = i + 1;
      while (line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
      if (depth === 1 && line[j + 1] === ':') keys.push(JSON.parse(line.slice(i, j + 1)) as string);
      i = j;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
  }
  return keys;
}

/** The `[service] {...}` lines of the output whose JSON names a key twice. */
export function linesWithRepeatedKeys(output: string): string[] {
  return output.split('\n').filter((l) => {
    const json = /^\[[a-z-]+\] (\{.*\})$/.exec(l)?.[1];
    if (json === undefined) return false;
    const keys = topLevelKeys(json);
    return new Set(keys).size !== keys.length;
  });
}
