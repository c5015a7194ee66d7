// How the console shows what tools and agents answer: text as Markdown (parsed by `marked`,
// then cleaned by DOMPurify, since an answer is whatever a model or a tool wrote: no script,
// no event handler, no remote image survives), and every artifact a card names as an inline
// image when it is one. Nothing here sets HTML that DOMPurify has not returned.
import DOMPurify from 'dompurify';
import { marked } from 'marked';
import { blobUrl, get, p } from './api.ts';
import { h, json } from './dom.ts';

// Images in Markdown may only be data: or blob: URLs (the CSP would block others anyway, and a
// remote image would tell a third party that someone read the answer).
DOMPurify.addHook('uponSanitizeAttribute', (node, data) => {
  if (node.nodeName === 'IMG' && data.attrName === 'src' && !/^(data|blob):/i.test(data.attrValue))
    data.keepAttr = false;
});

/** Markdown text as sanitized HTML in a div (`.markdown`). */
export function markdown(text: string): HTMLElement {
  const html = marked.parse(text, { async: false, gfm: true, breaks: true });
  const el = h('div', { class: 'markdown' });
  el.innerHTML = DOMPurify.sanitize(html, {
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select'],
  });
  for (const a of el.querySelectorAll('a')) {
    a.setAttribute('rel', 'noopener noreferrer');
    a.setAttribute('target', '_blank');
  }
  return el;
}

/**
 * An answer as a person reads it: a string as Markdown; an object as its fields, strings as
 * Markdown and anything else as wrapped JSON; and the images among the artifacts it names.
 */
export function answerView(value: unknown): HTMLElement {
  const box = h('div', { class: 'answer' });
  if (typeof value === 'string') box.append(markdown(value));
  else if (value && typeof value === 'object' && !Array.isArray(value)) {
    const dl = h('dl', { class: 'fields' });
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      dl.append(h('dt', {}, k), h('dd', {}, typeof v === 'string' ? markdown(v) : json(v)));
    }
    box.append(dl);
  } else if (value !== undefined && value !== null) box.append(json(value));
  const pics = artifactImages(value);
  if (pics) box.append(pics);
  return box;
}

/** Every `artifact_id` named anywhere in a value (a card's result, a final answer). */
export function artifactIds(value: unknown, out = new Set<string>(), depth = 0): Set<string> {
  if (depth > 8 || value === null || typeof value !== 'object') return out;
  if (Array.isArray(value)) {
    for (const v of value) artifactIds(v, out, depth + 1);
    return out;
  }
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (k === 'artifact_id' && typeof v === 'string') out.add(v);
    else artifactIds(v, out, depth + 1);
  }
  return out;
}

const IMAGE = /^image\/(png|gif|jpeg|webp)$/;

/**
 * The images among the artifacts a value names, each fetched with the key (a blob: URL);
 * null when it names none. Other artifacts show their file name and type.
 */
export function artifactImages(value: unknown): HTMLElement | null {
  const ids = [...artifactIds(value)];
  if (ids.length === 0) return null;
  const box = h('div', { class: 'inline-artifacts' });
  for (const id of ids.slice(0, 12)) {
    const fig = h('figure', { class: 'artifact', 'data-artifact': id });
    box.append(fig);
    get<{ filename: string; mime: string; download_url: string }>(
      p(`/artifacts/${encodeURIComponent(id)}`),
    )
      .then(async (a) => {
        fig.append(h('figcaption', {}, `${a.filename} · ${a.mime}`));
        if (!IMAGE.test(a.mime)) return;
        const url = await blobUrl(a.download_url);
        fig.prepend(h('img', { src: url, alt: a.filename, class: 'preview' }));
      })
      .catch((err: unknown) =>
        fig.append(h('p', { class: 'muted' }, `artifact ${id}: ${String(err)}`)),
      );
  }
  return box;
}

/** A result card: the images it names, then its JSON. */
export function cardView(content: unknown, cls = 'json card'): HTMLElement {
  const box = h('div', { class: 'card-view' });
  const result = (content as { result?: unknown } | null)?.result;
  const pics = artifactImages(result);
  if (pics) box.append(pics);
  box.append(json(content, cls));
  return box;
}
