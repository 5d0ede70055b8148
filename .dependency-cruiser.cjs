/**
 * The import layers (docs/architecture.md "Layers"), checked by `npm run lint`.
 *
 * Each entry of LAYERS is one layer, lowest first; a file may import files of its own folder and
 * of folders in lower layers, never a sibling in the same layer or anything above it. So the
 * folders form one direction: the composition roots → plugins and sync → features → the module
 * seam → identity → platform → domain → kernel.
 */
const LAYERS = [
  ['src/kernel', 'src/log.ts', 'src/version.ts'],
  ['src/domain'],
  ['src/config'],
  ['src/metrics.ts'],
  ['src/store'],
  ['src/http'],
  ['src/auth'],
  ['src/module.ts'],
  // The hub identity's HTTP face is a module: it sits above the seam it is written against.
  ['src/auth/identity-module.ts'],
  ['src/mesh'],
  ['src/weather'],
  ['src/nodes'],
  ['src/ingest'],
  ['src/messaging'],
  // The mesh API: a module on the radio's tap and messaging's paced send (`messaging.sendPaced`).
  ['src/mesh-api'],
  // Mesh insight: device metrics and their rollups; traceroutes and links (sent through messaging's paced queue).
  ['src/device-health'],
  ['src/topology'],
  ['src/mqtt'],
  ['src/live'],
  // The packet log and notifications, both shown live over the live stream.
  ['src/packets'],
  ['src/notifications'],
  ['src/retention'],
  // Backups of the hub's database (the migration runner's pre-migration copy is in src/store).
  ['src/backup'],
  ['src/ui-server'],
  ['src/billing'],
  ['src/mcp'],
  ['sync/protocol.ts'],
  ['sync/signing.ts'],
  ['sync/site', 'plugins/billing', 'plugins/audit', 'sync/upstream'],
  ['plugins/index.ts'],
  ['hub', 'sync/upstream/main.ts'],
];

const escapeRegex = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A regex for a folder (and everything below it) or one file. */
const unit = (u) => (u.endsWith('.ts') ? `^${escapeRegex(u)}$` : `^${escapeRegex(u)}/`);

const rules = [];
LAYERS.forEach((layer, index) => {
  const above = LAYERS.slice(index + 1).flat();
  for (const from of layer) {
    const siblings = layer.filter((u) => u !== from);
    const forbidden = [...siblings, ...above].filter(
      (u) => !unit(u).startsWith(unit(from).replace(/\/$/, '')),
    );
    if (!forbidden.length) continue;
    rules.push({
      name: `layer:${from}`,
      comment: `${from} may import only its own folder and the layers below it (.dependency-cruiser.cjs)`,
      severity: 'error',
      from: {
        path: unit(from),
        pathNot: LAYERS.slice(index + 1)
          .flat()
          .filter((u) => unit(u).startsWith(unit(from)))
          .map(unit),
      },
      to: { path: forbidden.map(unit) },
    });
  }
});

module.exports = {
  forbidden: [
    ...rules,
    {
      name: 'web-app-through-schemas',
      comment: 'the browser app (src/web) imports server code only through the shared schemas (schemas.ts)',
      severity: 'error',
      from: { path: '^src/web/' },
      to: { path: '^(src|plugins|sync|hub)/', pathNot: ['^src/web/', '/schemas\\.ts$', '^src/domain/'] },
    },
    {
      name: 'in-a-layer',
      comment: 'every application file belongs to a layer: add its folder to LAYERS',
      severity: 'error',
      from: { path: '^(src|hub|plugins|sync)/', pathNot: [...LAYERS.flat().map(unit), '^src/web/'] },
      to: {},
    },
    {
      name: 'optional-sdks-loaded-on-use',
      comment:
        'the MCP SDK and web-push (13 MB of memory together) are imported on first use (`import()`), so a hub that does not serve /mcp or send a push never loads them; only `meshhub mcp` (hub/mcp.ts) and the server it loads (src/mcp/server.ts) import them at the top',
      severity: 'error',
      from: { path: '^(src|plugins|sync)/', pathNot: ['^src/mcp/server\\.ts$'] },
      to: {
        path: ['^(node_modules/)?(@modelcontextprotocol/sdk|web-push)(/|$)', '^src/mcp/server\\.ts$'],
        dependencyTypesNot: ['type-only', 'type-import', 'dynamic-import'],
      },
    },
    {
      name: 'not-to-tests-or-scripts',
      comment: 'application code never imports tests or scripts',
      severity: 'error',
      from: { path: '^(src|hub|plugins|sync)/' },
      to: { path: '^(tests|scripts)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^dist/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.d.ts'],
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
