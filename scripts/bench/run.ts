/**
 * `npm run bench`: every benchmark, each measuring the raw library baseline and our path in the
 * same run, printed as a table of ratios. `npm run bench -- writer history` runs a subset.
 * Exits non-zero when a target is missed, so a regression is loud.
 */
import type { BenchResult } from './report.js';

const SUITES: Record<string, () => Promise<{ run(): Promise<BenchResult[]> }>> = {
  writer: () => import('./writer.js'),
  history: () => import('./history.js'),
  latest: () => import('./latest.js'),
  rss: () => import('./rss.js'),
  mqtt: () => import('./mqtt.js'),
  ingest: () => import('./ingest.js'),
  messages: () => import('./messages.js'),
  audit: () => import('./audit.js'),
  'audit-rules': () => import('./audit-rules.js'),
  'audit-ask': () => import('./audit-ask.js'),
  'audit-siem': () => import('./audit-siem.js'),
  'audit-sigma': () => import('./audit-sigma.js'),
  'audit-scale': () => import('./audit-scale.js'),
  billing: () => import('./billing.js'),
  web: () => import('./web.js'),
  sync: () => import('./sync.js'),
  'mesh-api': () => import('./mesh-api.js'),
  'idle-rss': () => import('./edge-rss.js'),
  'load-rss': async () => ({ run: (await import('./edge-rss.js')).runLoad }),
  storage: () => import('./storage.js'),
  migrate: () => import('./migrate.js'),
  start: () => import('./start.js'),
  'mqtt-nodes': async () => ({ run: (await import('./mqtt.js')).runNodes }),
  'history-http': () => import('./history-http.js'),
  'packet-log': () => import('./packet-log-ingest.js'),
  'notification-rules': () => import('./notification-rules.js'),
  renumber: () => import('./renumber.js'),
  'device-health-history': () => import('./device-health-history.js'),
  'regional-feed': () => import('./regional-feed.js'),
};

const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));

async function main(): Promise<void> {
  const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const names = wanted.length ? wanted : Object.keys(SUITES);
  const unknown = names.filter((n) => !SUITES[n]);
  if (unknown.length)
    throw new Error(`unknown bench ${unknown.join(', ')}; known: ${Object.keys(SUITES).join(', ')}`);
  const results: BenchResult[] = [];
  for (const name of names) {
    process.stderr.write(`bench ${name}...\n`);
    const suite = await SUITES[name]!();
    for (const r of await suite.run()) {
      results.push(r);
      process.stderr.write(`  ${r.pass ? 'ok  ' : 'MISS'} ${r.name}: ${(r.ratio * 100).toFixed(1)}%\n`);
      if (r.notes) process.stderr.write(`       ${r.notes}\n`);
    }
  }
  const lines = [
    `node ${process.version}, ${new Date().toISOString()}`,
    '',
    '| benchmark | baseline | ours | ratio | target | |',
    '|---|---|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.name} | ${r.baseline.label}: ${fmt(r.baseline.value)} ${r.baseline.unit} | ${r.ours.label}: ${fmt(r.ours.value)} ${r.ours.unit} | ${(r.ratio * 100).toFixed(1)}% | ${r.target} | ${r.pass ? 'pass' : '**MISS**'} |`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (results.some((r) => !r.pass)) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
