/**
 * The module seam (docs/architecture.md "The module seam"): every feature of the hub, core or plugin, is a module —
 * a name, a settings schema and `create(ctx)` returning the actors it runs. The context is the
 * only thing a module sees of the hub; its shape is defined by the hub (src/module.ts), and this
 * file knows nothing of the domain.
 *
 * Settings: a module declares the settings it reads as a zod object whose keys are the setting
 * names (environment variables, or keys of CONFIG_FILE). The hub merges every enabled module's
 * schema into one, so every invalid setting of every module is reported at start-up at once,
 * and a module is handed only its own slice, parsed and typed.
 *
 * Versioning: MODULE_API_VERSION is bumped on any breaking change to the context. A module
 * states the version it was written for; the hub refuses one written for another version.
 *   1 — `PluginContext`: bus and database untyped, the whole environment, `mount` only.
 *   2 — typed settings slice, typed bus and database, `schedule`, `mount` with order and
 *       namespaces owned by the HTTP actor, `upgrade`, `auth.require`, prefixed metrics.
 */
import type { z } from 'zod';
import type { Actor } from './actor.js';

export const MODULE_API_VERSION = 2;

// biome-ignore lint/suspicious/noExplicitAny: any zod object schema; its parsed type is read with z.output
export type SettingsSchema = z.ZodObject<any>;

export interface ModuleParts {
  /** Actors to supervise; each lists in `dependsOn` the actors it needs running. */
  actors?: Actor[];
}

export interface ModuleDefinition<Ctx, S extends SettingsSchema = SettingsSchema> {
  /** Unique; names its log lines, its bus listeners and (for plugins) its metrics. */
  readonly name: string;
  readonly apiVersion: typeof MODULE_API_VERSION;
  /** The settings this module reads; keys are setting names. */
  readonly settings: S;
  create(ctx: Ctx & { settings: z.output<S> }): ModuleParts | undefined | Promise<ModuleParts | undefined>;
}

export class ModuleDefinitionError extends Error {
  override readonly name = 'ModuleDefinitionError';
}

/**
 * Checks a list of modules before anything is built: unique names, the right seam version,
 * and no setting claimed by two modules (one place per fact).
 */
export function checkModules(modules: ReadonlyArray<ModuleDefinition<unknown>>): void {
  const names = new Set<string>();
  const owners = new Map<string, string>();
  for (const module of modules) {
    if (module.apiVersion !== MODULE_API_VERSION) {
      throw new ModuleDefinitionError(
        `module "${module.name}" was written for module API ${module.apiVersion}; this hub speaks ${MODULE_API_VERSION}`,
      );
    }
    if (names.has(module.name)) throw new ModuleDefinitionError(`module "${module.name}" is listed twice`);
    names.add(module.name);
    for (const key of Object.keys(module.settings.shape)) {
      const owner = owners.get(key);
      if (owner) {
        throw new ModuleDefinitionError(`setting ${key} is declared by both "${owner}" and "${module.name}"`);
      }
      owners.set(key, module.name);
    }
  }
}
