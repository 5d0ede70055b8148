/**
 * What a plain-language question asks for, by pattern matching (spec "Ask behaviour" 1 and 3):
 * a time range, entities (user principal names, device names, IP addresses, operation names the
 * store knows), keyword intent mapped to services, and "failures". No LLM is involved.
 *
 * Intent → services (spec: device → device management, user → directory, "and so on"):
 * device words → device_management; user, group, role, sign-in words → directory; mailbox/mail →
 * exchange; file, site, share → sharepoint and onedrive; team, chat, channel, meeting → teams.
 */
import { type ExtractedRange, extractTimeRange } from './time-range.js';

export const NOISY_SERVICES = ['exchange', 'sharepoint', 'onedrive', 'teams'] as const;

/** Services of each intent, and the words that show it (matched as whole words, singular or plural). */
export const INTENTS: ReadonlyArray<{ intent: string; services: readonly string[]; words: RegExp }> = [
  {
    intent: 'device',
    services: ['device_management'],
    words:
      /\b(devices?|laptops?|phones?|tablets?|intune|enrol(?:l)?(?:ment|ed|s)?|compliance|wipe[sd]?|endpoints?)\b/,
  },
  {
    intent: 'user',
    services: ['directory'],
    words:
      /\b(users?|accounts?|groups?|roles?|passwords?|directory|entra|admins?|administrators?|memberships?|licen[cs]es?|app registrations?|service principals?|mfa)\b/,
  },
  {
    intent: 'mail',
    services: ['exchange'],
    words: /\b(mail|mailbox(?:es)?|e-?mails?|inbox(?:es)?|exchange|outlook|forwarding rules?)\b/,
  },
  {
    intent: 'file',
    services: ['sharepoint', 'onedrive'],
    words: /\b(files?|sites?|shares?|shared|sharing|sharepoint|onedrive|documents?|folders?)\b/,
  },
  {
    intent: 'chat',
    services: ['teams'],
    words: /\b(teams?|chats?|channels?|meetings?)\b/,
  },
];

const UPN = /\b[a-z0-9._%+'-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+\b/gi;
const IPV4 = /\b(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}\b/g;
const IPV6 = /(?<![\w:])(?:[0-9a-f]{1,4}:){2,7}[0-9a-f]{1,4}(?![\w:])/gi;
/** Windows-style device names (DESKTOP-…, LAPTOP-…, CONTOSO-PC12) and "device <name>". */
const DEVICE_NAME = /\b((?:desktop|laptop|pc|win|mac|iphone|ipad|android|surface)-[a-z0-9-]{2,})\b/gi;
const NAMED_DEVICE =
  /\b(?:device|laptop|phone|computer|machine) (?:named |called )?["']?([a-z0-9][a-z0-9_-]*-[a-z0-9_-]+|[a-z0-9_-]*\d[a-z0-9_-]*)["']?/gi;
const FAILURE = /\b(fail(?:s|ed|ures?|ing)?|unsuccessful|errors?|denied|blocked|rejected|problems?)\b/;

export interface ParsedQuestion {
  range?: ExtractedRange;
  actors: string[];
  devices: string[];
  ips: string[];
  /** Operation names of the store that the question names. */
  operations: string[];
  /** Intents shown by keywords, each with its services and the word that showed it. */
  intents: Array<{ intent: string; services: readonly string[]; word: string }>;
  failuresOnly: boolean;
  /** Issue 29: the known tenants the question names ("failed sign-ins in contoso"). */
  tenants: string[];
}

/**
 * The known tenants named in the question as whole words (not inside an address or a domain:
 * `alice@contoso.com` names a person). `default` is a common word: it counts only next to
 * "tenant".
 */
export function findTenants(question: string, known: readonly string[]): string[] {
  const words = question
    .toLowerCase()
    .split(/[^a-z0-9@.-]+/)
    .map((w) => w.replace(/[.-]+$/, ''));
  return known.filter((name) => {
    if (name !== 'default') return words.includes(name);
    return /\bdefault tenant\b|\btenant default\b/.test(question.toLowerCase());
  });
}

const unique = (values: string[]) => [...new Set(values)];

/**
 * The names worth looking for (folded, at least 4 characters), longest first — sorted once per
 * list: the ask service hands the same list to every question until its names change.
 */
const sortedNames = new WeakMap<readonly string[], Array<{ name: string; n: string }>>();
function longestFirst(known: readonly string[]): Array<{ name: string; n: string }> {
  let list = sortedNames.get(known);
  if (!list) {
    list = [...known]
      .sort((a, b) => b.length - a.length)
      .map((name) => ({ name, n: name.toLowerCase().trim() }))
      .filter(({ n }) => n.length >= 4);
    sortedNames.set(known, list);
  }
  return list;
}

/**
 * Operation names the question contains, longest first, whole words only (case-insensitive),
 * at least 4 characters (so "Send" needs the word, and "Add" alone never matches).
 */
export function findOperations(question: string, known: readonly string[]): string[] {
  const q = ` ${question.toLowerCase().replace(/\s+/g, ' ')} `;
  const found: string[] = [];
  for (const { name, n } of longestFirst(known)) {
    const at = q.indexOf(n);
    if (at < 0) continue;
    const before = q[at - 1] ?? ' ';
    const after = q[at + n.length] ?? ' ';
    if (/[\p{L}\p{N}_]/u.test(before) || /[\p{L}\p{N}_]/u.test(after)) continue;
    // A shorter name inside a longer one already found is the same mention.
    if (found.some((f) => f.toLowerCase().includes(n))) continue;
    found.push(name);
  }
  return found;
}

export function parseQuestion(
  question: string,
  options: { now: number; knownOperations?: readonly string[]; knownTenants?: readonly string[] },
): ParsedQuestion {
  const text = question.replace(/\s+/g, ' ').trim();
  const lower = text.toLowerCase();
  const actors = unique((text.match(UPN) ?? []).map((a) => a.toLowerCase()));
  // An address inside a UPN's domain is not an IP; neither is a version-looking 4-part number in a UPN.
  const withoutUpns = text.replace(UPN, ' ');
  const ips = unique([...(withoutUpns.match(IPV4) ?? []), ...(withoutUpns.match(IPV6) ?? [])]);
  const devices = unique([
    ...[...withoutUpns.matchAll(DEVICE_NAME)].map((m) => m[1]!.toUpperCase()),
    ...[...withoutUpns.matchAll(NAMED_DEVICE)]
      .map((m) => m[1]!)
      .filter((d) => !ips.includes(d))
      .map((d) => d.toUpperCase()),
  ]);
  const operations = findOperations(withoutUpns, options.knownOperations ?? []);
  const intents: ParsedQuestion['intents'] = [];
  for (const { intent, services, words } of INTENTS) {
    const m = words.exec(lower.replace(UPN, ' '));
    if (m) intents.push({ intent, services, word: m[1] ?? m[0] });
  }
  // A named device is a question about devices, whatever the other words say.
  if (devices.length && !intents.some((i) => i.intent === 'device')) {
    intents.unshift({ intent: 'device', services: INTENTS[0]!.services, word: devices[0]! });
  }
  const range = extractTimeRange(text, options.now);
  return {
    ...(range ? { range } : {}),
    actors,
    devices,
    ips,
    operations,
    intents,
    failuresOnly: FAILURE.test(lower),
    tenants: findTenants(withoutUpns, options.knownTenants ?? []),
  };
}
