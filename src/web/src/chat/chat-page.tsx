/**
 * Chat: sign-in when needed, then the conversations beside the open thread (one at a time on a
 * phone), under the subscription bar when the hub sells messaging (the billing plugin).
 */
import { SubscriptionBar } from '../billing/subscription-bar.js';
import { useStore, useTitle } from '../hooks.js';
import { tokenRoles } from '../lib/jwt.js';
import { hubStore } from '../state/hub.js';
import { sessionStore } from '../state/session.js';
import './chat.css';
import { t } from '../i18n/index.js';
import { ConversationList } from './conversation-list.js';
import { SignIn } from './sign-in.js';
import { Thread } from './thread.js';

export function ChatPage({ nodeId }: { nodeId?: string }) {
  const { session, notice } = useStore(sessionStore);
  const { plugins } = useStore(hubStore);
  useTitle(session ? t('header.chat') : t('chat.signIn'));
  if (!session) return <SignIn notice={notice} />;
  // Admins need no subscription to message.
  const billed = !!plugins?.includes('billing') && !tokenRoles(session.token).includes('admin');
  return (
    <div class={`chat${nodeId ? ' chat-with-thread' : ''}${billed ? ' chat-billed' : ''}`}>
      {billed && <SubscriptionBar />}
      <ConversationList activeId={nodeId} />
      {nodeId ? (
        <Thread nodeId={nodeId} key={nodeId} />
      ) : (
        <div class="thread thread-placeholder">
          <p class="muted">{t('chat.choose')}</p>
          <p class="muted small">{t('chat.signedInAs', { name: session.username })}</p>
        </div>
      )}
    </div>
  );
}
