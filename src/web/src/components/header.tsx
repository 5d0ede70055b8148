/**
 * The header on every page: where you are, the radio link, the version, chat with its unread
 * count, and the plans (and billing, for admins) when the hub runs the billing plugin. On the
 * upstream, which has no radio, it says "Upstream" and how many sites it serves, with a link to
 * them.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { RadioStatus } from '../api/types.js';
import { useNow, useStore } from '../hooks.js';
import { type MessageKey, t } from '../i18n/index.js';
import { tokenRoles } from '../lib/jwt.js';
import { upstreamSummary } from '../lib/site-health.js';
import { Link } from '../router.js';
import { chatStore, totalUnread } from '../state/chat.js';
import { hubStore } from '../state/hub.js';
import { sessionStore, signOut } from '../state/session.js';
import { sitesStore } from '../state/sites.js';
import { DisplaySettingsMenu } from './display-settings.js';

const RADIO_WORDS: Record<RadioStatus['state'], MessageKey> = {
  connected: 'header.radioConnected',
  connecting: 'header.radioConnecting',
  configuring: 'header.radioConfiguring',
  disconnected: 'header.radioDisconnected',
};

/** The radio as the RADIO setting names it: `tcp:127.0.0.1:4403`, `/dev/ttyUSB0`. */
export function radioSetting(radio: Pick<RadioStatus, 'transport' | 'address'>): string | undefined {
  if (!radio.address) return undefined;
  return radio.transport === 'tcp' ? `tcp:${radio.address}` : radio.address;
}

interface RadioSummary {
  text: string;
  tone: string;
  title: string;
  /** The lines of the pill's popover: the state, where the radio is, the last error. */
  details: string[];
}

function radioSummary(radio: RadioStatus | undefined, hubReachable: boolean): RadioSummary {
  const only = (text: string, tone: string, title: string) => ({ text, tone, title, details: [title] });
  if (!hubReachable) return only(t('header.radioUnknown'), 'unknown', t('header.radioUnknownTitle'));
  if (!radio) return only('…', 'unknown', t('header.waitingForHub'));
  if (radio.transport === 'none') return only(t('header.radioNone'), 'unknown', t('header.radioNoneTitle'));
  const setting = radioSetting(radio);
  const state = t(RADIO_WORDS[radio.state]);
  const details = [
    t(radio.simulated ? 'header.radioLinkSimulated' : 'header.radioLink', { state }),
    ...(setting ? [t('header.radioSetting', { setting })] : []),
    ...(radio.state !== 'connected' && radio.lastError
      ? [t('header.lastError', { error: radio.lastError })]
      : []),
  ];
  const tone = radio.state === 'connected' ? 'good' : radio.state === 'disconnected' ? 'bad' : 'warn';
  return { text: state, tone, title: details.join('\n'), details };
}

/** The radio pill: its state at a glance; a tap (or hover) tells where the radio is and what went wrong. */
function RadioPill({ status }: { status: RadioSummary }) {
  const [open, setOpen] = useState(false);
  return (
    <span class="radio-pill">
      <button
        type="button"
        class={`pill pill-${status.tone} pill-button`}
        title={status.title}
        data-testid="radio-state"
        aria-expanded={open}
        aria-controls="radio-details"
        onClick={() => setOpen(!open)}
      >
        <span class="dot" aria-hidden="true" />
        <span class="pill-label">{t('header.radio')} </span>
        {status.text}
      </button>
      {open && (
        <div id="radio-details" class="radio-details" role="status" data-testid="radio-details">
          {status.details.map((line) => (
            <p key={line} class="radio-detail">
              {line}
            </p>
          ))}
        </div>
      )}
    </span>
  );
}

/** A link of the main navigation, marked as the page shown when `current`. */
function NavLink({
  href,
  current,
  children,
}: {
  href: string;
  current: boolean;
  children: ComponentChildren;
}) {
  return (
    <Link href={href} class="nav-link" aria-current={current ? 'page' : undefined}>
      {children}
    </Link>
  );
}

export function Header({ page }: { page: string }) {
  const hub = useStore(hubStore);
  const chat = useStore(chatStore);
  const { session } = useStore(sessionStore);
  const unread = session ? totalUnread(chat) : 0;
  const upstream = hub.mode === 'upstream';
  const sitesView = useStore(sitesStore);
  const now = useNow(30_000) + sitesView.clockOffsetMs;
  const status = hub.signInToRead
    ? { text: t('header.signInToSee'), tone: 'unknown', title: t('header.signInToSeeTitle') }
    : upstream
      ? upstreamSummary(sitesView.loaded ? sitesView.sites : undefined, hub.connection === 'open', now)
      : radioSummary(hub.radio, hub.connection === 'open');
  const billing = !!hub.plugins?.includes('billing');
  const audit = !!hub.plugins?.includes('audit');
  const admin = !!session && tokenRoles(session.token).includes('admin');
  return (
    <header class="site-header">
      <Link href="/" class="brand" aria-label={t('header.home')}>
        <svg viewBox="0 0 32 32" width="26" height="26" aria-hidden="true">
          <circle cx="16" cy="16" r="4" fill="currentColor" />
          <circle cx="6" cy="8" r="3" fill="currentColor" opacity=".7" />
          <circle cx="26" cy="9" r="3" fill="currentColor" opacity=".7" />
          <circle cx="9" cy="26" r="3" fill="currentColor" opacity=".7" />
          <path
            d="M6 8 16 16 26 9M16 16 9 26M16 16l9 8"
            stroke="currentColor"
            stroke-width="1.6"
            fill="none"
            opacity=".7"
          />
        </svg>
        <span class="brand-name">meshhub</span>
      </Link>
      <nav aria-label={t('header.mainNav')}>
        <NavLink href="/" current={page === 'dashboard' || page === 'node'}>
          {t('header.map')}
        </NavLink>
        <NavLink href="/chat" current={page === 'chat'}>
          {t('header.chat')}
          {unread > 0 && (
            <span class="badge" data-testid="unread-total">
              {unread}
              <span class="visually-hidden"> {t('header.unread')}</span>
            </span>
          )}
        </NavLink>
        {upstream && (
          <NavLink href="/sites" current={page === 'sites'}>
            {t('header.sites')}
          </NavLink>
        )}
        {audit && (
          <NavLink href="/audit" current={page === 'audit'}>
            {t('header.audit')}
          </NavLink>
        )}
        {billing && (
          <NavLink href="/plans" current={page === 'plans'}>
            {t('header.plans')}
          </NavLink>
        )}
        {billing && admin && (
          <NavLink href="/admin/billing" current={page === 'admin-billing'}>
            {t('header.billing')}
          </NavLink>
        )}
        {/* Alerts and Packets go last: on a phone the links before them keep their place. */}
        {session && !upstream && (
          <NavLink href="/notifications" current={page === 'notifications'}>
            {t('header.alerts')}
          </NavLink>
        )}
        {!upstream && (
          <NavLink href="/packets" current={page === 'packets'}>
            {t('header.packets')}
          </NavLink>
        )}
      </nav>
      <div class="header-status">
        {upstream ? (
          <span class={`pill pill-${status.tone}`} title={status.title} data-testid="upstream-state">
            <span class="dot" aria-hidden="true" />
            <span class="pill-label">{t('header.upstream')} · </span>
            {status.text}
          </span>
        ) : (
          <RadioPill status={status as RadioSummary} />
        )}
        {hub.version && (
          <span class="version" title={t('header.version')} data-testid="version">
            v{hub.version}
          </span>
        )}
        <DisplaySettingsMenu />
        {session && (
          <button
            type="button"
            class="link-button"
            onClick={() => signOut(t('header.signedOut'))}
            title={t('header.signedInAs', { name: session.username })}
          >
            {t('header.signOut')}
          </button>
        )}
      </div>
    </header>
  );
}
