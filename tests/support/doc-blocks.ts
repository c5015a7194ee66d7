// The fenced code blocks of a markdown page, as tests/docs.test.ts runs them.

export interface Block {
  file: string;
  line: number;
  tag: string;
  code: string;
}

/** The fenced blocks of a markdown page (also those indented in a list). */
export function blocksOf(file: string, text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,})(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, info] = open as unknown as [string, string, string, string];
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !lines[j]!.startsWith(`${indent}${fence}`); j++) {
      body.push(lines[j]!.slice(indent.length));
    }
    blocks.push({
      file,
      line: i + 1,
      tag: info.trim().split(/\s+/)[0] ?? '',
      code: body.join('\n'),
    });
    i = j;
  }
  return blocks;
}
