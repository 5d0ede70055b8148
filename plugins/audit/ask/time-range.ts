/**
 * Time ranges in a plain-language question, by pattern matching (spec "Ask behaviour" 1: no LLM
 * is needed for parsing). Every range is [start, end) in ms UTC, and calendar words (today,
 * Monday, October) are UTC days: the hub stores UTC and answers in UTC.
 *
 * Understood: today, yesterday, this week/month/year, last/past N minutes|hours|days|weeks|months,
 * last/past hour|day|week|month (rolling), since <weekday|date|month>, in/during <month> [year],
 * on <date>, ISO dates and date-times, before/after <date>, between/from <date> and/to <date>.
 * A month name without a year is the most recent such month (this one included).
 */

export interface ExtractedRange {
  start?: number;
  end?: number;
  /** The words that set it, for query_info. */
  phrase: string;
}

const DAY = 86_400_000;
const UNIT_MS: Record<string, number> = {
  minute: 60_000,
  hour: 3_600_000,
  day: DAY,
  week: 7 * DAY,
  month: 30 * DAY,
};
const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const NUMBER_WORDS: Record<string, number> = {
  a: 1,
  an: 1,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  twelve: 12,
  fourteen: 14,
  thirty: 30,
};

const MONTH_NC =
  '(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)';
const MONTH_RE = `(${MONTH_NC})`;
const ISO_DATE = '\\d{4}-\\d{2}-\\d{2}';
const ISO_DATETIME =
  '\\d{4}-\\d{2}-\\d{2}[t ]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d{1,9})?)?(?:z|[+-]\\d{2}:?\\d{2})?';
/** One capture: a date in any form `pointOf` reads (ISO date-time, ISO date, "3 october [2025]", "october 3[, 2025]"). */
const DATE = `(${ISO_DATETIME}|${ISO_DATE}|\\d{1,2}(?:st|nd|rd|th)? ${MONTH_NC}(?: \\d{4})?|${MONTH_NC} \\d{1,2}(?!\\d)(?:st|nd|rd|th)?(?:,? \\d{4})?)`;

const startOfDay = (ms: number) => Math.floor(ms / DAY) * DAY;
const monthIndex = (name: string) => MONTHS.findIndex((m) => m.startsWith(name.slice(0, 3)));

/** A month without a year: the most recent one, this month included. */
function monthRange(month: number, year: number | undefined, now: number): { start: number; end: number } {
  const today = new Date(now);
  const y = year ?? (month <= today.getUTCMonth() ? today.getUTCFullYear() : today.getUTCFullYear() - 1);
  return { start: Date.UTC(y, month, 1), end: Date.UTC(y, month + 1, 1) };
}

/** The instant a date phrase names, and whether it is a whole day (then `dayEnd` is its end). */
function pointOf(phrase: string, now: number): { at: number; dayEnd?: number } | undefined {
  const p = phrase.trim().toLowerCase();
  if (/^\d{4}-\d{2}-\d{2}$/.test(p)) {
    const at = Date.parse(`${p}T00:00:00Z`);
    return Number.isFinite(at) && new Date(at).toISOString().startsWith(p)
      ? { at, dayEnd: at + DAY }
      : undefined;
  }
  if (/^\d{4}-\d{2}-\d{2}[t ]/.test(p)) {
    const normalized = p.replace(' ', 'T').toUpperCase();
    const withZone = /(Z|[+-]\d{2}:?\d{2})$/.test(normalized) ? normalized : `${normalized}Z`;
    const at = Date.parse(withZone);
    return Number.isFinite(at) ? { at } : undefined;
  }
  const dm = new RegExp(`^(\\d{1,2})(?:st|nd|rd|th)? ${MONTH_RE}(?: (\\d{4}))?$`).exec(p);
  const md = new RegExp(`^${MONTH_RE} (\\d{1,2})(?:st|nd|rd|th)?(?:,? (\\d{4}))?$`).exec(p);
  const parts = dm
    ? { day: Number(dm[1]), month: monthIndex(dm[2]!), year: dm[3] }
    : md
      ? { day: Number(md[2]), month: monthIndex(md[1]!), year: md[3] }
      : undefined;
  if (!parts || parts.day < 1 || parts.day > 31) return undefined;
  const y = parts.year
    ? Number(parts.year)
    : new Date(monthRange(parts.month, undefined, now).start).getUTCFullYear();
  const at = Date.UTC(y, parts.month, parts.day);
  if (new Date(at).getUTCMonth() !== parts.month) return undefined;
  return { at, dayEnd: at + DAY };
}

interface Rule {
  re: RegExp;
  range(m: RegExpExecArray, now: number): { start?: number; end?: number } | undefined;
}

const amount = (word: string) => NUMBER_WORDS[word] ?? Number(word);

const RULES: Rule[] = [
  {
    re: new RegExp(`\\b(?:between|from) ${DATE} (?:and|to|until|till) ${DATE}`),
    range(m, now) {
      const a = pointOf(m[1]!, now);
      const b = pointOf(m[2]!, now);
      if (!a || !b) return undefined;
      return { start: a.at, end: b.dayEnd ?? b.at };
    },
  },
  {
    re: /\b(?:in |during )?(?:the )?(?:last|past|previous) (\d{1,4}|an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fourteen|thirty) (minute|hour|day|week|month)s?\b/,
    range(m, now) {
      const n = amount(m[1]!);
      if (!Number.isFinite(n) || n < 1) return undefined;
      return { start: now - n * UNIT_MS[m[2]!]!, end: now + 1 };
    },
  },
  {
    re: /\b(?:in |during )?(?:the )?(?:last|past) (minute|hour|day|week|month|year)\b/,
    range(m, now) {
      const unit = m[1] === 'year' ? 365 * DAY : UNIT_MS[m[1]!]!;
      return { start: now - unit, end: now + 1 };
    },
  },
  {
    re: /\b(?:in |during )?(?:the )?last (\d{1,4}) ?(h|d|w)\b/,
    range(m, now) {
      const unit = { h: 3_600_000, d: DAY, w: 7 * DAY }[m[2] as 'h' | 'd' | 'w'];
      return { start: now - Number(m[1]) * unit, end: now + 1 };
    },
  },
  { re: /\btoday\b/, range: (_m, now) => ({ start: startOfDay(now), end: startOfDay(now) + DAY }) },
  {
    re: /\b(?:yesterday|the day before)\b/,
    range: (_m, now) => ({ start: startOfDay(now) - DAY, end: startOfDay(now) }),
  },
  {
    re: /\bthis week\b/,
    range: (_m, now) => ({ start: sinceWeekday(1, now), end: now + 1 }),
  },
  {
    re: /\bthis month\b/,
    range(_m, now) {
      const d = new Date(now);
      return { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: now + 1 };
    },
  },
  {
    re: /\bthis year\b/,
    range: (_m, now) => ({ start: Date.UTC(new Date(now).getUTCFullYear(), 0, 1), end: now + 1 }),
  },
  {
    re: /\bsince (?:last )?(sunday|monday|tuesday|wednesday|thursday|friday|saturday)\b/,
    range: (m, now) => ({ start: sinceWeekday(WEEKDAYS.indexOf(m[1]!), now), end: now + 1 }),
  },
  {
    re: new RegExp(`\\bsince ${DATE}`),
    range(m, now) {
      const p = pointOf(m[1]!, now);
      return p ? { start: p.at, end: now + 1 } : undefined;
    },
  },
  {
    re: new RegExp(`\\bsince ${MONTH_RE}\\b`),
    range: (m, now) => ({ start: monthRange(monthIndex(m[1]!), undefined, now).start, end: now + 1 }),
  },
  {
    re: new RegExp(`\\b(?:before|until|till) ${DATE}`),
    range(m, now) {
      const p = pointOf(m[1]!, now);
      return p ? { end: p.at } : undefined;
    },
  },
  {
    re: new RegExp(`\\bafter ${DATE}`),
    range(m, now) {
      const p = pointOf(m[1]!, now);
      return p ? { start: p.dayEnd ?? p.at } : undefined;
    },
  },
  {
    re: new RegExp(`\\b(?:on )?${DATE}`),
    range(m, now) {
      const p = pointOf(m[1]!, now);
      if (!p) return undefined;
      // A bare date-time is a moment: the hour around it is what a person means.
      return p.dayEnd ? { start: p.at, end: p.dayEnd } : { start: p.at, end: p.at + 3_600_000 };
    },
  },
  {
    re: new RegExp(`\\b(?:in|during) ${MONTH_RE}(?: (\\d{4}))?\\b`),
    range: (m, now) => monthRange(monthIndex(m[1]!), m[2] ? Number(m[2]) : undefined, now),
  },
  {
    re: /\bon (sunday|monday|tuesday|wednesday|thursday|friday|saturday)\b/,
    range(m, now) {
      const start = sinceWeekday(WEEKDAYS.indexOf(m[1]!), now);
      return { start, end: start + DAY };
    },
  },
];

/** Midnight of the most recent `weekday` (today when it is that day). */
function sinceWeekday(weekday: number, now: number): number {
  const today = startOfDay(now);
  const back = (new Date(today).getUTCDay() - weekday + 7) % 7;
  return today - back * DAY;
}

/** The first time range the question states, or undefined. */
export function extractTimeRange(question: string, now: number): ExtractedRange | undefined {
  const q = question.toLowerCase().replace(/\s+/g, ' ');
  let best: { index: number; range: ExtractedRange; priority: number } | undefined;
  RULES.forEach((rule, priority) => {
    const m = rule.re.exec(q);
    if (!m) return;
    const r = rule.range(m, now);
    if (!r) return;
    // The earliest-listed rule wins (between … and … before a bare date inside it).
    if (!best || priority < best.priority) {
      best = { index: m.index, priority, range: { ...r, phrase: m[0].trim() } };
    }
  });
  return best?.range;
}
