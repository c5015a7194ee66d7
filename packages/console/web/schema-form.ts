// A form field from a JSON Schema property: an input suited to its type (text, number, checkbox,
// a select for a string enum, JSON otherwise) and how to read the value back. The tools page
// builds a tool's try-it form from these, the inputs page an MCP server's requested form.
import { h } from './dom.ts';

export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  enum?: unknown[];
  description?: string;
  default?: unknown;
}

const str = (v: unknown): string =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
    ? String(v)
    : v == null
      ? '—'
      : JSON.stringify(v);

const typeOf = (s: Schema): string | undefined =>
  Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;

/** One field of the form: an input suited to the property's type, and how to read it back. */
export function field(
  name: string,
  s: Schema,
  required: boolean,
): { el: HTMLElement; read: () => unknown } {
  const type = typeOf(s);
  const label = (input: HTMLElement) =>
    h(
      'label',
      { class: 'field' },
      h('span', {}, `${name}${required ? ' *' : ''}`, h('small', {}, ` ${type ?? 'json'}`)),
      input,
      s.description ? h('small', { class: 'muted' }, s.description) : null,
    );
  if (s.enum?.every((v) => typeof v === 'string')) {
    const sel = h(
      'select',
      { name },
      required ? null : h('option', { value: '' }, '—'),
      ...s.enum.map((v) => h('option', { value: v }, v)),
    ) as HTMLSelectElement;
    return { el: label(sel), read: () => sel.value || undefined };
  }
  if (type === 'boolean') {
    const box = h('input', { type: 'checkbox', name }) as HTMLInputElement;
    if (s.default === true) box.checked = true;
    return { el: label(box), read: () => box.checked };
  }
  if (type === 'string' || type === 'number' || type === 'integer') {
    const numeric = type !== 'string';
    const input = h('input', {
      name,
      type: numeric ? 'number' : 'text',
      step: type === 'integer' ? 1 : numeric ? 'any' : undefined,
      required,
      value: s.default === undefined ? undefined : str(s.default),
    }) as HTMLInputElement;
    return {
      el: label(input),
      read: () => (input.value === '' ? undefined : numeric ? Number(input.value) : input.value),
    };
  }
  const area = h('textarea', { name, rows: 3, required, placeholder: 'JSON' });
  const ta = area as HTMLTextAreaElement;
  return {
    el: label(area),
    read: () => {
      if (!ta.value.trim()) return undefined;
      try {
        return JSON.parse(ta.value) as unknown;
      } catch {
        throw new Error(`${name}: not valid JSON`);
      }
    },
  };
}
