/** The hub's JSON, as the routes write it (src/events.ts RadioStatus, src/messaging/message.ts). */

export interface RadioStatus {
  state: 'disconnected' | 'connecting' | 'configuring' | 'connected';
  transport: 'serial' | 'tcp' | 'none';
  address?: string;
  simulated: boolean;
  myNodeNum?: number;
  lastError?: string;
}

export interface HealthReport {
  status: 'ok' | 'degraded' | 'down';
  version: string;
  radio: RadioStatus;
}

export interface HelloEvent {
  version: string;
  started_at: string;
  radio: RadioStatus;
}

export interface TileJson {
  tilejson: string;
  tiles: string[];
  minzoom: number;
  maxzoom: number;
  attribution: string;
  bounds?: [number, number, number, number];
  center?: [number, number, number];
  name?: string;
}

export type MessageStatus = 'queued' | 'sent' | 'delivered' | 'failed' | 'received' | 'read';

export interface MessageRecord {
  id: string;
  direction: 'outbound' | 'inbound';
  sender_node_id: string | null;
  target_node_id: string | null;
  text: string;
  status: MessageStatus;
  created_at: string;
  /** Only in the detail (GET /messages/{id}) and the live stream. */
  node_id?: string;
  updated_at?: string;
  attempts?: number;
  failure_code?: string;
  failure_reason?: string;
}

export interface ConversationSummary {
  node_id: string;
  nickname: string;
  latest_text: string;
  latest_at: string;
  unread_count: number;
}

export interface TokenResponse {
  access_token: string;
  token_type: string;
  expires_in: number;
}
