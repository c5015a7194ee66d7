// Charts drawn as SVG by hand: bars over time and horizontal bars by name. Small on purpose:
// the console has three charts and no interactions beyond a tooltip (<title>).
const NS = 'http://www.w3.org/2000/svg';

function el(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

export interface Series {
  label: string;
  cls: string;
  values: (number | null)[];
}

/** Columns per x (bars for the first series, lines for the rest), with a y-axis maximum label. */
export function timeChart(
  xs: string[],
  series: Series[],
  unit: string,
  w = 640,
  hgt = 180,
): SVGElement {
  const svg = el('svg', { viewBox: `0 0 ${w} ${hgt + 24}`, class: 'chart', role: 'img' });
  const max = Math.max(1, ...series.flatMap((s) => s.values.map((v) => v ?? 0)));
  const step = w / Math.max(1, xs.length);
  const y = (v: number) => hgt - (v / max) * (hgt - 10);
  svg.append(el('text', { x: 4, y: 12, class: 'axis' }, `${Math.round(max)} ${unit}`));
  svg.append(el('line', { x1: 0, y1: hgt, x2: w, y2: hgt, class: 'base' }));
  series.forEach((s, i) => {
    if (i === 0) {
      s.values.forEach((v, j) => {
        const r = el('rect', {
          x: j * step + 1,
          y: y(v ?? 0),
          width: Math.max(1, step - 2),
          height: hgt - y(v ?? 0),
          class: s.cls,
        });
        r.append(el('title', {}, `${xs[j]}: ${v ?? 0} ${s.label}`));
        svg.append(r);
      });
    } else {
      const pts = s.values.flatMap((v, j) =>
        v === null ? [] : [[j * step + step / 2, y(v)] as const],
      );
      if (pts.length > 1) {
        svg.append(
          el('polyline', {
            points: pts.map(([a, b]) => `${a},${b}`).join(' '),
            class: s.cls,
            fill: 'none',
          }),
        );
      }
      // A dot per minute with data: one minute alone is a point, not a line.
      for (const [a, b] of pts)
        svg.append(el('circle', { cx: a, cy: b, r: 3, class: `dot ${s.cls}` }));
    }
  });
  if (xs.length) {
    svg.append(el('text', { x: 0, y: hgt + 18, class: 'axis' }, xs[0] ?? ''));
    svg.append(
      el('text', { x: w, y: hgt + 18, class: 'axis', 'text-anchor': 'end' }, xs.at(-1) ?? ''),
    );
  }
  return svg;
}

/** One horizontal bar per name, values 0..1 shown as percentages. */
export function rateBars(
  items: { name: string; rate: number; note: string }[],
  w = 640,
): SVGElement {
  const row = 22;
  const svg = el('svg', {
    viewBox: `0 0 ${w} ${Math.max(1, items.length) * row}`,
    class: 'chart',
    role: 'img',
  });
  const label = 200;
  items.forEach((it, i) => {
    svg.append(el('text', { x: 0, y: i * row + 15, class: 'axis' }, it.name));
    svg.append(
      el('rect', {
        x: label,
        y: i * row + 4,
        width: w - label - 80,
        height: row - 8,
        class: 'track',
      }),
    );
    svg.append(
      el('rect', {
        x: label,
        y: i * row + 4,
        width: Math.max(0, (w - label - 80) * it.rate),
        height: row - 8,
        class: 'fail',
      }),
    );
    svg.append(
      el(
        'text',
        { x: w - 76, y: i * row + 15, class: 'axis' },
        `${(it.rate * 100).toFixed(1)}% ${it.note}`,
      ),
    );
  });
  return svg;
}
