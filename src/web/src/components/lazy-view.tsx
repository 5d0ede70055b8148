/**
 * A view whose code is loaded on first use (the chart library only for node pages, the chat
 * only for chat). A chunk that fails to load (the hub restarted with a new build, the Wi-Fi
 * dropped) shows a reload button, never a blank page.
 */
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';

// biome-ignore lint/suspicious/noExplicitAny: each lazy view has its own props
type AnyComponent = ComponentType<any>;
const loaded = new Map<() => Promise<AnyComponent>, AnyComponent>();

export function LazyView<P extends object>({
  load,
  props,
}: {
  load: () => Promise<ComponentType<P>>;
  props: P;
}) {
  const [view, setView] = useState<ComponentType<P> | undefined>(
    () => loaded.get(load) as ComponentType<P> | undefined,
  );
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    if (view) return;
    let cancelled = false;
    load().then(
      (component) => {
        loaded.set(load, component);
        if (!cancelled) setView(() => component);
      },
      () => {
        if (!cancelled) setFailed(true);
      },
    );
    return () => {
      cancelled = true;
    };
  }, [load, view]);
  if (failed) {
    return (
      <section class="panel notice notice-error" role="alert">
        <h1>This part of the app could not be loaded</h1>
        <p>The hub may have restarted with a new version, or the connection dropped.</p>
        <button type="button" class="button" onClick={() => location.reload()}>
          Reload the page
        </button>
      </section>
    );
  }
  if (!view) {
    return (
      <p class="loading" role="status">
        Loading…
      </p>
    );
  }
  const View = view;
  return <View {...props} />;
}
