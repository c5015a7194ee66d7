// Markdown to HTML for answers: parsed by `marked`, then cleaned by DOMPurify, since an answer
// is whatever a model or a tool wrote: no script, no event handler, no frame, no remote image
// survives. Nothing here sets HTML that DOMPurify has not returned. Loaded on first use.
import DOMPurify from 'dompurify';
import { marked } from 'marked';

// Images in Markdown may only be data: or blob: URLs (the CSP would block others anyway, and a
// remote image would tell a third party that someone read the answer).
DOMPurify.addHook('uponSanitizeAttribute', (node, data) => {
  if (node.nodeName === 'IMG' && data.attrName === 'src' && !/^(data|blob):/i.test(data.attrValue))
    data.keepAttr = false;
});

/** Replaces the element's content with the text rendered as sanitized HTML. */
export function renderInto(el: HTMLElement, text: string): void {
  const html = marked.parse(text, { async: false, gfm: true, breaks: true });
  el.innerHTML = DOMPurify.sanitize(html, {
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select'],
  });
  for (const a of el.querySelectorAll('a')) {
    a.setAttribute('rel', 'noopener noreferrer');
    a.setAttribute('target', '_blank');
  }
}
