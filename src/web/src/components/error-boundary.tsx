import { Component, type ComponentChildren } from 'preact';
import { t } from '../i18n/index.js';

interface Props {
  children: ComponentChildren;
  /** Changing it (the route) clears a caught error. */
  resetKey: string;
}

/** A view that throws while rendering shows this instead of a blank page; the header stays usable. */
export class ErrorBoundary extends Component<Props, { error?: Error; key: string }> {
  override state: { error?: Error; key: string } = { key: this.props.resetKey };

  static override getDerivedStateFromError(error: unknown) {
    return { error: error instanceof Error ? error : new Error(String(error)) };
  }

  static override getDerivedStateFromProps(props: Props, state: { error?: Error; key: string }) {
    return props.resetKey !== state.key ? { error: undefined, key: props.resetKey } : null;
  }

  override componentDidCatch(error: unknown) {
    console.error('DEBUG', (error as Error).stack);
  }
  override render() {
    if (!this.state.error) return this.props.children;
    return (
      <section class="panel notice notice-error" role="alert">
        <h1>{t('common.viewFailedHeading')}</h1>
        <p>{t('common.viewFailedText')}</p>
        <p class="muted">{t('common.details', { message: this.state.error.message })}</p>
        <button type="button" class="button" onClick={() => location.reload()}>
          {t('common.reload')}
        </button>
      </section>
    );
  }
}
