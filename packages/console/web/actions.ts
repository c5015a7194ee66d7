// A button that acts through the api: disabled while its request runs, and saying in the
// status line beside it what came of it (the api's error code and message when refused).
import { errorText } from './api.ts';
import { h } from './dom.ts';

/** The line an action writes its outcome to (`data-state` ok or error). */
export const statusLine = (): HTMLElement =>
  h('p', { class: 'action-status', role: 'status', 'aria-live': 'polite' });

export function actionButton(
  label: string,
  name: string,
  run: () => Promise<string | undefined>,
  status: HTMLElement,
): HTMLElement {
  const b = h('button', { type: 'button', 'data-action': name }, label) as HTMLButtonElement;
  b.addEventListener('click', () => {
    b.disabled = true;
    status.textContent = '';
    delete status.dataset['state'];
    run()
      .then((msg) => {
        status.dataset['state'] = 'ok';
        status.textContent = msg ?? '';
      })
      .catch((err: unknown) => {
        status.dataset['state'] = 'error';
        status.textContent = errorText(err);
      })
      .finally(() => {
        b.disabled = false;
      });
  });
  return b;
}
