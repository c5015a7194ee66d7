// Artifacts: the project's files, newest first; images (PNG, GIF, JPEG, WebP, SVG as an image)
// previewed inline, anything else downloadable. Both go through the api with the bearer token.
import { blobUrl, get, p } from '../api.ts';
import { clear, h, time } from '../dom.ts';

interface Artifact {
  artifact_id: string;
  filename: string;
  mime: string;
  size_bytes: number;
  created_at: string;
  download_url: string;
}

const PREVIEW = /^image\/(png|gif|jpeg|webp)$/;

const size = (n: number) =>
  n < 1024
    ? `${n} B`
    : n < 1 << 20
      ? `${(n / 1024).toFixed(1)} KiB`
      : `${(n / (1 << 20)).toFixed(1)} MiB`;

export async function artifactsPage(root: HTMLElement): Promise<void> {
  const { artifacts } = await get<{ artifacts: Artifact[] }>(p('/artifacts?limit=100'));
  const grid = h('div', { class: 'grid' });
  clear(
    root,
    h(
      'div',
      { class: 'toolbar' },
      h('h1', {}, 'Artifacts'),
      h('span', {}, `${artifacts.length} shown`),
    ),
    grid,
  );
  if (artifacts.length === 0) grid.append(h('p', { class: 'muted' }, 'no artifacts yet'));
  for (const a of artifacts) {
    const figure = h('figure', { class: 'artifact', 'data-artifact': a.artifact_id });
    const download = h('button', { type: 'button', onclick: () => void save(a) }, 'Download');
    figure.append(
      h(
        'figcaption',
        {},
        h('b', {}, a.filename),
        h('small', {}, ` ${a.mime} · ${size(a.size_bytes)} · ${time(a.created_at)}`),
        download,
      ),
    );
    grid.append(figure);
    if (PREVIEW.test(a.mime)) {
      blobUrl(a.download_url)
        .then((url) => figure.prepend(h('img', { src: url, alt: a.filename, class: 'preview' })))
        .catch((err: unknown) => figure.append(h('p', { class: 'error' }, String(err))));
    }
  }
}

async function save(a: Artifact): Promise<void> {
  const url = await blobUrl(a.download_url);
  const link = h('a', { href: url, download: a.filename });
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
