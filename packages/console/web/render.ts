// How the console shows what tools and agents answer: text as Markdown (markdown.ts, loaded
// on first use so the first page stays small), and every artifact a card names as an inline
// image when it is one.
import { blobUrl, get, p, session } from './api.ts';
import { h, json } from './dom.ts';
import type { renderInto } from './markdown.ts';

let renderer: Promise<{ renderInto: typeof renderInto }> | undefined;

/**
 * Markdown text in a div (`.markdown`): shown as plain text at once, then replaced by the
 * sanitized HTML once the renderer has loaded.
 */
export function markdown(text: string): HTMLElement {
  const el = h('div', { class: 'markdown' }, text);
  renderer ??= import('./markdown.ts');
  void renderer.then((m) => m.renderInto(el, text));
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
    artifactOf(id)
      .then((a) => {
        if (a.url) fig.append(h('img', { src: a.url, alt: a.filename, class: 'preview' }));
        fig.append(h('figcaption', {}, `${a.filename} · ${a.mime}`));
      })
      .catch((err: unknown) =>
        fig.append(h('p', { class: 'muted' }, `artifact ${id}: ${String(err)}`)),
      );
  }
  return box;
}

// Artifacts do not change: each is read once per key, however often a live page re-renders.
const artifacts = new Map<string, Promise<{ filename: string; mime: string; url?: string }>>();
const artifactKey = (id: string) => `${session.key ?? ''} ${p('')}/${id}`;

function artifactOf(id: string): Promise<{ filename: string; mime: string; url?: string }> {
  const key = artifactKey(id);
  let found = artifacts.get(key);
  if (!found) {
    found = get<{ filename: string; mime: string; download_url: string }>(
      p(`/artifacts/${encodeURIComponent(id)}`),
    ).then(async (a) =>
      IMAGE.test(a.mime)
        ? { filename: a.filename, mime: a.mime, url: await blobUrl(a.download_url) }
        : { filename: a.filename, mime: a.mime },
    );
    // A failure (the key was refused, the network dropped) is not kept.
    found.catch(() => artifacts.delete(key));
    artifacts.set(key, found);
  }
  return found;
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
