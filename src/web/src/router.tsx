/** History-API routing: links change the URL without a reload; back and forward work. */
import type { ComponentChildren } from 'preact';
import { createStore } from './lib/store.js';

export interface Location {
  pathname: string;
  search: string;
}

export const locationStore = createStore<Location>({ pathname: location.pathname, search: location.search });

window.addEventListener('popstate', () => {
  locationStore.set({ pathname: location.pathname, search: location.search });
});

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = new URL(to, location.href);
  if (url.pathname === location.pathname && url.search === location.search) return;
  if (options.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  locationStore.set({ pathname: url.pathname, search: url.search });
}

interface AnchorProps {
  href: string;
  class?: string;
  title?: string;
  children?: ComponentChildren;
  onClick?: (event: MouseEvent) => void;
  'aria-current'?: 'page' | undefined;
  'aria-label'?: string;
}

/** An ordinary link (open in new tab, copy address all work) that navigates in place on a plain click. */
export function Link({ href, onClick, ...rest }: AnchorProps) {
  return (
    <a
      {...rest}
      href={href}
      onClick={(event) => {
        onClick?.(event);
        if (
          event.defaultPrevented ||
          event.button !== 0 ||
          event.metaKey ||
          event.ctrlKey ||
          event.shiftKey ||
          event.altKey
        ) {
          return;
        }
        event.preventDefault();
        navigate(href);
      }}
    />
  );
}
