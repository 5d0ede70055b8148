/**
 * `COPY … FROM STDIN` on a pooled connection, written chunk by chunk (the readings of a batch,
 * sync/upstream/batch-apply.ts): the caller builds the next chunk while PostgreSQL loads the one
 * before. A `pg` Submittable of its own (about what pg-copy-streams does, which is a dev
 * dependency only), speaking the protocol's copy-in sub-protocol through the connection `pg`
 * hands it.
 *
 * A failure (a unique violation, a bad value) rejects `write` or `end` with PostgreSQL's error
 * as `pg` reports it (`code` is the SQLSTATE); nothing more is sent after it (the server drops
 * what was in flight), and the connection is ready for the ROLLBACK.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type pg from 'pg';
import { deferred } from '../../../src/kernel/deferred.js';

/** The part of pg's Connection a copy-in uses (not in @types/pg). */
interface CopyConnection {
  query(text: string): void;
  endCopyFrom(): void;
  stream: Writable;
}

/** The protocol's CopyData message type ('d'). */
const COPY_DATA = 0x64;
/** Bytes queued on the socket past which `write` waits for it to drain. */
const HIGH_WATER = 1024 * 1024;

class CopyFromQuery {
  private connection: CopyConnection | undefined;
  readonly started = deferred();
  readonly finished = deferred();
  failure: Error | undefined;
  rowCount = 0;

  constructor(readonly text: string) {}

  submit(connection: unknown): void {
    this.connection = connection as CopyConnection;
    this.connection.query(this.text);
  }

  /** pg's query-timeout hook looks for it. */
  callback(): void {}

  handleCopyInResponse(): void {
    this.started.resolve();
  }

  handleCommandComplete(message: { text?: string }): void {
    const match = /^COPY (\d+)/.exec(message.text ?? '');
    if (match) this.rowCount = Number(match[1]);
  }

  handleReadyForQuery(): void {
    this.finished.resolve();
  }

  handleError(error: Error): void {
    this.failure = error;
    this.started.reject(error);
    this.finished.reject(error);
  }

  // Messages a COPY FROM never gets; pg calls them on its active query if they came.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}

  get socket(): Writable {
    return this.connection!.stream;
  }

  /** A CopyData message: its header, then the chunk itself (not copied into one buffer first). */
  send(chunk: Buffer): void {
    const header = Buffer.allocUnsafe(5);
    header[0] = COPY_DATA;
    header.writeUInt32BE(chunk.length + 4, 1);
    const socket = this.connection!.stream;
    socket.write(header);
    socket.write(chunk);
  }

  done(): void {
    this.connection!.endCopyFrom();
  }
}

export interface CopyIn {
  /** Sends a chunk; waits while the socket is backed up. Throws PostgreSQL's error once it failed. */
  write(chunk: Buffer): Promise<void>;
  /** Ends the copy; resolves with the rows copied once PostgreSQL has them. */
  end(): Promise<number>;
}

/** Starts `COPY … FROM STDIN …` (`sql`) on `client`. */
export function copyFrom(client: pg.PoolClient, sql: string): CopyIn {
  const query = new CopyFromQuery(sql);
  client.query(query as unknown as pg.Submittable);
  return {
    async write(chunk) {
      await query.started.promise;
      if (query.failure) throw query.failure;
      query.send(chunk);
      const socket = query.socket;
      if (socket.writableLength > HIGH_WATER) {
        await Promise.race([once(socket, 'drain'), query.finished.promise]);
      }
      if (query.failure) throw query.failure;
    },
    async end() {
      await query.started.promise;
      if (query.failure) throw query.failure;
      query.done();
      await query.finished.promise;
      return query.rowCount;
    },
  };
}
