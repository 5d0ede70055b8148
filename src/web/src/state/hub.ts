/** The hub itself as the header shows it: version, radio link, and whether the live stream is up. */
import type { RadioStatus, ServerMode } from '../api/types.js';
import { createStore } from '../lib/store.js';
import type { StreamState } from '../live/event-stream.js';

export interface HubState {
  version?: string;
  startedAt?: string;
  radio?: RadioStatus;
  connection: StreamState;
  /** The hub came back with another version than this page was loaded from: offer a reload. */
  updatedTo?: string;
  /** The live stream has connected at least once. */
  everConnected: boolean;
  /** The plugins the hub runs (from `hello`): their pages show only then. */
  plugins?: readonly string[];
  /** Hub or upstream (from `hello`, or from `/api/version` before it); unknown until then. */
  mode?: ServerMode;
  /** An upstream whose reads need a sign-in, and nobody is signed in (state/read-access.ts). */
  signInToRead?: boolean;
}

export const hubStore = createStore<HubState>({ connection: 'connecting', everConnected: false });
