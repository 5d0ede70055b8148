/**
 * Reads SIGMA_RULES_DIR at start-up: every `.yml`/`.yaml` file below it (sorted), each document
 * in it one rule. A rule we cannot honour exactly is refused whole, with its file, title, id and
 * reason; a bad file never stops the others. A folder that is missing or unreadable stops the
 * start with one line naming the setting.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { AuditConfigError } from '../settings.js';
import { type CompiledSigmaRule, compileSigmaRule } from './compile.js';
import { SigmaRefusal } from './refusal.js';

export interface LoadedSigmaRule {
  /** The file, relative to SIGMA_RULES_DIR, `/`-separated. */
  file: string;
  rule: CompiledSigmaRule;
}

export interface RefusedSigmaRule {
  file: string;
  title: string | null;
  id: string | null;
  reason: string;
}

export interface SigmaLoad {
  rules: LoadedSigmaRule[];
  refused: RefusedSigmaRule[];
}

const MAX_FILE_BYTES = 1024 * 1024;
const MAX_FILES = 5_000;

function ruleFiles(dir: string): string[] {
  let info: ReturnType<typeof statSync>;
  try {
    info = statSync(dir);
  } catch {
    throw new AuditConfigError([
      `SIGMA_RULES_DIR: ${dir} does not exist; point it at a folder of Sigma rule files (.yml) or unset it`,
    ]);
  }
  if (!info.isDirectory())
    throw new AuditConfigError([
      `SIGMA_RULES_DIR: ${dir} is not a folder; point it at a folder of Sigma rule files (.yml)`,
    ]);
  let entries: string[];
  try {
    entries = readdirSync(dir, { recursive: true, encoding: 'utf8' });
  } catch (error) {
    throw new AuditConfigError([
      `SIGMA_RULES_DIR: cannot read ${dir} (${(error as NodeJS.ErrnoException).code ?? 'error'}); give the hub read access to it`,
    ]);
  }
  return entries
    .filter((e) => /\.ya?ml$/i.test(e))
    .sort()
    .slice(0, MAX_FILES);
}

const text = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : null);
const head = (doc: unknown) =>
  typeof doc === 'object' && doc !== null && !Array.isArray(doc)
    ? { title: text((doc as Record<string, unknown>).title), id: text((doc as Record<string, unknown>).id) }
    : { title: null, id: null };

export function loadSigmaRules(dir: string): SigmaLoad {
  const out: SigmaLoad = { rules: [], refused: [] };
  const ids = new Map<string, string>();
  for (const entry of ruleFiles(dir)) {
    const path = join(dir, entry);
    const file = relative(dir, path).split(sep).join('/');
    const refuse = (reason: string, doc?: unknown) => out.refused.push({ file, ...head(doc), reason });
    let source: string;
    try {
      if (!statSync(path).isFile()) continue;
      if (statSync(path).size > MAX_FILE_BYTES) {
        refuse('the file is larger than 1 MiB');
        continue;
      }
      source = readFileSync(path, 'utf8');
    } catch (error) {
      refuse(`cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
      continue;
    }
    const docs = parseAllDocuments(source);
    const list = Array.isArray(docs) ? docs : [docs];
    const broken = list.flatMap((d) => d.errors)[0];
    if (broken) {
      refuse(`not valid YAML: ${broken.message.split('\n')[0]}`);
      continue;
    }
    for (const d of list) {
      const doc: unknown = d.toJS({ maxAliasCount: 100 });
      if (doc === null || doc === undefined) continue;
      try {
        const rule = compileSigmaRule(doc);
        const seen = rule.id ? ids.get(rule.id.toLowerCase()) : undefined;
        if (seen) throw new SigmaRefusal(`${seen} has a rule with the same id`);
        if (rule.id) ids.set(rule.id.toLowerCase(), file);
        out.rules.push({ file, rule });
      } catch (error) {
        if (!(error instanceof SigmaRefusal)) throw error;
        refuse(error.message, doc);
      }
    }
  }
  return out;
}
