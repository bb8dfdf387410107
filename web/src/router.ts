/** Paths of the interface, routed in the browser (the gateway answers index.html for them). */
import { signal } from './store';

export const location$ = signal(window.location.pathname + window.location.search);

export function navigate(to: string, replace = false): void {
  if (to === location$.value) return;
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  location$.value = to;
  window.scrollTo(0, 0);
}

window.addEventListener('popstate', () => {
  location$.value = window.location.pathname + window.location.search;
});

/** Same-origin links navigate without reloading (modified clicks keep the browser's behaviour). */
export function onLinkClick(event: MouseEvent): void {
  const anchor = (event.target as HTMLElement | null)?.closest('a');
  if (!anchor || anchor.target || anchor.origin !== window.location.origin || anchor.hasAttribute('download')) return;
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  if (anchor.pathname.startsWith('/api/') || anchor.pathname.startsWith('/docs')) return;
  event.preventDefault();
  navigate(anchor.pathname + anchor.search);
}
