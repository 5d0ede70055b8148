/**
 * The AI feature group's parts, made once when the plugin is created with AI_FEATURES_ENABLED:
 * the cache store (SQLite, or Redis with CACHE_URL), the LLM client (or none), the ask service
 * and the background job runner. LLM_BASE_URL is checked here where DNS is allowed: a name that
 * resolves to a private address without LLM_ALLOW_PRIVATE_NETWORK stops the start; a name that
 * does not resolve now (no internet yet) is a warning — every connection checks again.
 */
import { ConfigError } from '../../../src/config/load.js';
import { OutboundUrlError } from '../../../src/http/outbound-url.js';
import type { Logger } from '../../../src/log.js';
import { redisBackend } from '../cache/redis.js';
import { sqliteBackend } from '../cache/sqlite.js';
import type { CacheBackend } from '../cache/store.js';
import type { PrivacyPolicy } from '../http/privacy.js';
import { AskJobRunnerActor } from '../jobs/job-runner-actor.js';
import { checkLlmBaseUrlResolved } from '../llm/base-url.js';
import { ChatCompletionsClient, type LanguageModel, NO_MODEL } from '../llm/client.js';
import type { AuditConfig } from '../settings.js';
import type { AuditStore } from '../store/audit-store.js';
import { AskService } from './ask-service.js';
import type { AiFeatures } from './routes.js';

export async function openCacheBackend(
  config: AuditConfig,
  store: AuditStore,
  log: Logger,
): Promise<CacheBackend> {
  if (!config.cacheUrl) return sqliteBackend(() => store.repos().db);
  const url = new URL(config.cacheUrl);
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new ConfigError(['CACHE_URL: expected redis://… or rediss://…']);
  }
  try {
    const backend = await redisBackend(config.cacheUrl);
    log.info({ cache_store: 'redis', host: url.host }, 'the audit cache store is Redis (CACHE_URL)');
    return backend;
  } catch (error) {
    throw new ConfigError([`CACHE_URL: Redis at ${url.host} is not reachable: ${(error as Error).message}`]);
  }
}

export async function createAiFeatures(deps: {
  config: AuditConfig;
  store: AuditStore;
  privacy: PrivacyPolicy;
  log: Logger;
}): Promise<AiFeatures> {
  const { config, log } = deps;
  const llmSettings = config.ai.llm;
  let llm: LanguageModel = NO_MODEL;
  if (!llmSettings) {
    log.warn(
      {},
      'AI_FEATURES_ENABLED is true but no LLM_BASE_URL is set: asks and explanations answer with lists, without a language model',
    );
  } else {
    if (llmSettings.allowPrivateNetwork) {
      log.warn(
        { host: llmSettings.baseUrl.host, plain_http: llmSettings.baseUrl.protocol === 'http:' },
        'LLM_ALLOW_PRIVATE_NETWORK is true: questions and audit events go to a model on the local network or this machine, which the hub cannot vouch for',
      );
    }
    try {
      await checkLlmBaseUrlResolved(llmSettings.baseUrl.href, llmSettings);
    } catch (error) {
      if (error instanceof OutboundUrlError && error.reason === 'unresolvable') {
        log.warn(
          { host: llmSettings.baseUrl.host },
          'LLM_BASE_URL does not resolve now; asks answer without the model until it does',
        );
      } else {
        throw new ConfigError([`LLM_BASE_URL: ${(error as Error).message}`]);
      }
    }
    llm = new ChatCompletionsClient(llmSettings);
    log.info({ model: llmSettings.model, host: llmSettings.baseUrl.host }, 'AI features on');
  }
  const backend = await openCacheBackend(config, deps.store, log);
  const service = new AskService({
    store: deps.store,
    privacy: deps.privacy,
    llm,
    cache: backend.cache,
    maxEvents: config.ai.maxEvents,
    log,
  });
  const runner = new AskJobRunnerActor({ backend, service, log, onStop: () => llm.close() });
  return { service, runner, backend };
}
