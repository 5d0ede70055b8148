/**
 * Background asks (spec "Ask behaviour" 10): `POST /api/ask` with `"async": true` queues a job in
 * the cache store (SQLite, or Redis with CACHE_URL) and answers 202 with its id; this actor runs
 * queued jobs one at a time and stores each result. Jobs survive a restart: at start, a job left
 * `running` (the process stopped under it) is queued again and rerun. A job and its result
 * expire JOB_TTL_MS after creation; then GET /api/jobs/{id} is 404.
 */
import { randomBytes } from 'node:crypto';
import { ProblemError } from '../../../src/http/problem.js';
import { Actor, type KernelLogger } from '../../../src/kernel/actor.js';
import type { AskInput, AskService } from '../ask/ask-service.js';
import type { CacheBackend } from '../cache/store.js';
import type { Caller } from '../http/context.js';

export const JOB_TTL_MS = 24 * 3_600_000;

/** Who owns a job: the verified issuer and subject, or `anonymous` when auth is off. */
export function ownerOf(caller: Caller): string {
  return caller.authenticated && caller.subject ? `${caller.issuer ?? ''}|${caller.subject}` : 'anonymous';
}

interface StoredRequest {
  input: AskInput;
  caller: Caller;
}

export class AskJobRunnerActor extends Actor {
  readonly name = 'audit-ask-jobs';
  override readonly dependsOn = ['store'];
  override readonly required = false;
  private draining: Promise<void> | undefined;
  private stopping = false;
  private ran = 0;

  constructor(
    private readonly deps: {
      backend: CacheBackend;
      service: AskService;
      log: KernelLogger;
      /** Runs when the runner stops (closing the LLM client's connections; they reopen on use). */
      onStop?: () => Promise<void>;
    },
  ) {
    super();
  }

  async start(): Promise<void> {
    this.stopping = false;
    await this.deps.backend.open();
    const requeued = await this.deps.backend.jobs.requeueRunning();
    if (requeued) this.deps.log.info({ requeued }, 'ask jobs interrupted by a restart are queued again');
    this.kick();
  }

  async enqueue(input: AskInput, caller: Caller): Promise<string> {
    const id = randomBytes(16).toString('base64url');
    const request: StoredRequest = { input, caller };
    await this.deps.backend.jobs.create({
      id,
      owner: ownerOf(caller),
      request: JSON.stringify(request),
      ttlMs: JOB_TTL_MS,
    });
    this.kick();
    return id;
  }

  /** Runs queued jobs until none is left; one drain at a time. */
  kick(): void {
    if (this.draining || this.stopping) return;
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
    });
  }

  /** Resolves when the queue is empty (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private async drain(): Promise<void> {
    for (;;) {
      if (this.stopping) return;
      let job: Awaited<ReturnType<CacheBackend['jobs']['claimNext']>>;
      try {
        job = await this.deps.backend.jobs.claimNext();
      } catch (error) {
        this.deps.log.warn({ err: (error as Error).message }, 'the job store failed; queued asks wait');
        return;
      }
      if (!job) return;
      const { input, caller } = JSON.parse(job.request) as StoredRequest;
      try {
        const result = await this.deps.service.ask(input, caller);
        await this.deps.backend.jobs.finish(job.id, { status: 'succeeded', result: JSON.stringify(result) });
      } catch (error) {
        const message =
          error instanceof ProblemError && error.status < 500 ? error.detail : 'the ask failed; try again';
        if (!(error instanceof ProblemError))
          this.deps.log.error({ err: error, job: job.id }, 'ask job failed');
        await this.deps.backend.jobs
          .finish(job.id, { status: 'failed', error: message })
          .catch(() => undefined);
      }
      this.ran++;
    }
  }

  override describe(): Record<string, unknown> {
    return { store: this.deps.backend.kind, jobs_run: this.ran };
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.draining?.catch(() => undefined);
    await this.deps.onStop?.();
    await this.deps.backend.close();
  }
}
