// A few DOM helpers: elements from tag, attributes and children; text is always set as text
// (never parsed as HTML), so nothing the api returns can inject markup.
export type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | EventListener | undefined>;

export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

export function append(el: Element, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

export function clear(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/** Pretty JSON in a <pre>. */
export const json = (v: unknown, cls = 'json'): HTMLElement =>
  h('pre', { class: cls }, JSON.stringify(v, null, 2) ?? 'null');

export const time = (iso: string | null | undefined): string =>
  iso ? new Date(iso).toLocaleTimeString([], { hour12: false }) : '—';

export const ms = (n: number | null | undefined): string =>
  n === null || n === undefined
    ? '—'
    : n < 1000
      ? `${Math.round(n)} ms`
      : `${(n / 1000).toFixed(2)} s`;

export function table(headers: string[], rows: HTMLElement[], cls = ''): HTMLElement {
  return h(
    'table',
    { class: cls },
    h('thead', {}, h('tr', {}, ...headers.map((x) => h('th', {}, x)))),
    h('tbody', {}, ...rows),
  );
}

export const badge = (status: string): HTMLElement =>
  h('span', { class: `badge s-${status}` }, status);
