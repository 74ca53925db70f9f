/**
 * The console (docs/api.md §11): a few views over the public routes, drawn with DOM calls only, routed by the URL
 * fragment (`#/`, `#/decisions`, `#/why`, `#/pods/<namespace>/<name>`). Served by `npm start` and by the relay's
 * user port with a Content-Security-Policy that allows this script and stylesheet only.
 */
import { ApiError, signIn, signOut, token } from './api';
import { renderDecisions } from './decisions';
import { h, replace } from './dom';
import { renderOverview } from './overview';
import { renderPod } from './pod';

const main = document.getElementById('main') as HTMLElement;
const signOutButton = document.getElementById('sign-out') as HTMLButtonElement;
let generation = 0;

async function route(): Promise<void> {
  const mine = ++generation;
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path = '/', search = ''] = hash.split('?');
  const parts = path.split('/').filter((p) => p !== '').map(decodedOrRaw);
  signOutButton.hidden = token() === undefined;
  for (const a of document.querySelectorAll('header nav a')) a.toggleAttribute('aria-current', a.getAttribute('href') === `#/${parts[0] ?? ''}`);
  main.setAttribute('aria-busy', 'true');
  delete main.dataset.rendered;
  replace(main, h('p', { class: 'muted' }, 'Loading…'));
  try {
    if (parts.length === 0) await renderOverview(main);
    else if (parts[0] === 'decisions') await renderDecisions(main, new URLSearchParams(search));
    else if (parts[0] === 'why') renderWhy(main);
    else if (parts[0] === 'pods' && parts.length === 3) await renderPod(main, parts[1] ?? '', parts[2] ?? '');
    else replace(main, h('h1', null, 'Not found'), h('p', null, 'No such page. ', h('a', { href: '#/' }, 'Back to the overview')));
  } catch (err) {
    if (mine !== generation) return;
    renderError(err);
  } finally {
    if (mine === generation) {
      main.setAttribute('aria-busy', 'false');
      // Marks a finished render (tests and the benchmark wait for it; the benchmark reads the mark's time).
      main.dataset.rendered = String(mine);
      performance.mark('console-rendered');
    }
  }
}

/** A link's segment as written when it is not valid percent-encoding (the page then says what it cannot find). */
function decodedOrRaw(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function renderError(err: unknown): void {
  if (err instanceof ApiError && err.status === 401) return renderSignIn(err.message);
  if (err instanceof ApiError && err.status === 403) {
    replace(main, h('h1', { id: 'forbidden' }, 'Forbidden (403)'), h('p', null, 'You may not see this. The server said: ', h('q', null, err.message)), h('p', { class: 'muted' }, 'Ask for get on pods in the namespace (scheduler logs) or list on nodes (the overview).'));
    return;
  }
  const message = err instanceof ApiError ? `${err.status === 0 ? '' : `${err.status} `}${err.message}` : 'the console failed to draw this page';
  replace(main, h('h1', null, 'Something went wrong'), h('p', { class: 'bad' }, message));
}

function renderSignIn(why: string): void {
  const input = h('input', { type: 'password', id: 'token', autocomplete: 'off', required: true, 'aria-describedby': 'token-help' });
  const form = h(
    'form',
    { id: 'sign-in' },
    h('h1', null, 'Sign in'),
    h('p', null, `The server needs a bearer token (${why}).`),
    h('label', null, 'Bearer token ', input),
    h('p', { id: 'token-help', class: 'muted' }, 'A Kubernetes token (kubectl create token …) for the relay, or HAMI_API_TOKEN for npm start. It is kept for this tab only and sent in the Authorization header. `kubectl hami ui` signs you in with your kubeconfig instead.'),
    h('button', { type: 'submit' }, 'Sign in'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (input.value.trim() === '') return;
    signIn(input.value.trim());
    void route();
  });
  replace(main, form);
  input.focus();
}

function renderWhy(target: HTMLElement): void {
  const ns = h('input', { id: 'why-namespace', required: true, value: 'default', autocomplete: 'off' });
  const name = h('input', { id: 'why-name', required: true, autocomplete: 'off' });
  const form = h('form', { id: 'why' }, h('h1', null, 'Why is my pod pending?'), h('label', null, 'Namespace ', ns), h('label', null, 'Pod ', name), h('button', { type: 'submit' }, 'Ask'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    location.hash = `#/pods/${encodeURIComponent(ns.value.trim())}/${encodeURIComponent(name.value.trim())}`;
  });
  replace(target, form);
  name.focus();
}

signOutButton.addEventListener('click', () => {
  signOut();
  void route();
});
window.addEventListener('hashchange', () => void route());
void route();
