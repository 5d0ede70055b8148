/**
 * A view whose code is loaded on first use (the chart library only for node pages, the chat
 * only for chat). A chunk that fails to load (the hub restarted with a new build, the Wi-Fi
 * dropped) shows a reload button, never a blank page.
 */
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { t } from '../i18n/index.js';

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
  // One LazyView stays mounted when the app goes from one lazy page to another (the plans, then
  // the chat): what it shows belongs to the `load` it was made for, never to the previous one.
  const [state, setState] = useState<{ load: typeof load; view?: ComponentType<P>; failed?: boolean }>(
    () => ({
      load,
      view: loaded.get(load) as ComponentType<P> | undefined,
    }),
  );
  const current =
    state.load === load ? state : { load, view: loaded.get(load) as ComponentType<P> | undefined };
  const { view, failed } = current;
  useEffect(() => {
    if (view) return;
    let cancelled = false;
    load().then(
      (component) => {
        loaded.set(load, component);
        if (!cancelled) setState({ load, view: component as ComponentType<P> });
      },
      () => {
        if (!cancelled) setState({ load, failed: true });
      },
    );
    return () => {
      cancelled = true;
    };
  }, [load, view]);
  if (failed) {
    return (
      <section class="panel notice notice-error" role="alert">
        <h1>{t('common.lazyFailedHeading')}</h1>
        <p>{t('common.lazyFailedText')}</p>
        <button type="button" class="button" onClick={() => location.reload()}>
          {t('common.reloadPage')}
        </button>
      </section>
    );
  }
  if (!view) {
    return (
      <p class="loading" role="status">
        {t('common.loading')}
      </p>
    );
  }
  const View = view;
  return <View {...props} />;
}
