/**
 * `meshhub tiles extract`: the command line of tiles-extract.ts. Progress goes to stderr (one
 * line rewritten in place on a terminal, a line per tenth otherwise); stdout gets the file
 * written and the MAP_TILES line that serves it. Exit 0 done, 1 the source or disk failed (run it
 * again to resume), 2 a mistake on the command line.
 */
import { join, resolve } from 'node:path';
import { guardedFetch } from '../http/guarded-fetch.js';
import { type CliIo, parseCommand, pickSubcommand, reportCliError, UsageError } from '../kernel/cli-args.js';
import { type Bbox, extractTiles, MAX_TILES, type Progress, TilesExtractError } from './tiles-extract.js';

const EXTRACT = {
  name: 'meshhub tiles extract',
  help: `  meshhub tiles extract --bbox W,S,E,N --max-zoom N --source URL [--out FILE]
                        Copy the raster map tiles of an area (zoom 0 to N) from a remote .pmtiles
                        archive into a local one, fetching only the byte ranges needed; run it
                        where there is internet, then set MAP_TILES to the file it prints. An
                        interrupted run resumes when the same command is run again.
      --bbox W,S,E,N       the area: west, south, east, north in degrees (e.g. 8.4,47.3,8.7,47.5)
      --max-zoom N         the most detailed zoom, 0-20 (15 shows streets; each step ~4x the tiles)
      --source URL         an http(s) URL of a raster PMTiles v3 archive served with byte ranges
      --out FILE           the archive to write (default DATA_DIR/tiles/<source name>.pmtiles)
      --allow-private-network  allow a source on the LAN (loopback is always allowed)
`,
  options: {
    bbox: { type: 'string' },
    'max-zoom': { type: 'string' },
    source: { type: 'string' },
    out: { type: 'string' },
    'allow-private-network': { type: 'boolean' },
  },
  positionals: false,
} as const;

const GROUP = { name: 'meshhub tiles', help: EXTRACT.help, subcommands: ['extract'] as const };

export const TILES_HELP = `Usage:\n${GROUP.help}`;

export interface TilesCommandContext extends CliIo {
  /** DATA_DIR, read only when --out is not given. */
  dataDir: () => string;
  /** Whether stderr is a terminal (progress is then one line rewritten in place). */
  tty?: boolean;
}

const usage = (message: string) => new UsageError(`${EXTRACT.name}: ${message}`);

export function parseBbox(value: string | undefined): Bbox {
  const hint = 'write minLon,minLat,maxLon,maxLat in degrees, e.g. --bbox 8.4,47.3,8.7,47.5';
  if (value === undefined) throw usage(`--bbox is required; ${hint}`);
  const parts = value.split(',').map((p) => p.trim());
  const numbers = parts.map(Number);
  if (parts.length !== 4 || parts.some((p) => p === '') || numbers.some((n) => !Number.isFinite(n))) {
    throw usage(`--bbox "${value}" is not four numbers; ${hint}`);
  }
  const [west, south, east, north] = numbers as Bbox;
  if ([west, east].some((v) => v < -180 || v > 180))
    throw usage(`--bbox longitudes must be within -180..180; ${hint}`);
  if ([south, north].some((v) => v < -85.0511 || v > 85.0511)) {
    throw usage(`--bbox latitudes must be within -85.05..85.05 (the map's square world); ${hint}`);
  }
  if (west >= east || south >= north) {
    throw usage(`--bbox must have west below east and south below north; ${hint}`);
  }
  return [west, south, east, north];
}

export function parseMaxZoom(value: string | undefined): number {
  if (value === undefined) throw usage('--max-zoom is required: a whole number 0-20 (e.g. 14)');
  if (!/^\d{1,2}$/.test(value.trim()) || Number(value) > 20) {
    throw usage(`--max-zoom "${value}" must be a whole number 0-20 (e.g. 14)`);
  }
  return Number(value);
}

function parseSource(value: string | undefined): string {
  const hint = 'the http(s) URL of a raster .pmtiles archive (see the README, "Map tiles")';
  if (value === undefined) throw usage(`--source is required: ${hint}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw usage(`--source "${value}" is not a URL: ${hint}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw usage(`--source must be ${hint}`);
  return url.href;
}

/** DATA_DIR/tiles/<the source's file name>.pmtiles. */
function defaultOut(source: string, dataDir: string): string {
  const last = new URL(source).pathname.split('/').pop() ?? '';
  const stem = last
    .replace(/\.pmtiles$/i, '')
    .replace(/[^\w.-]+/g, '-')
    .replace(/^[.-]+/, '');
  return join(dataDir, 'tiles', `${stem || 'map'}.pmtiles`);
}

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;

function reporter(ctx: TilesCommandContext): (p: Progress) => void {
  let lastTenth = -1;
  return (p) => {
    const line = `tiles ${p.done}/${p.total}, ${mib(p.bytes)}${p.resumed ? ` (${p.resumed} from the interrupted run)` : ''}`;
    if (ctx.tty) {
      ctx.err(`\r${line}${p.done === p.total ? '\n' : ''}`);
      return;
    }
    const tenth = p.total === 0 ? 10 : Math.floor((p.done / p.total) * 10);
    if (tenth !== lastTenth) {
      lastTenth = tenth;
      ctx.err(`${line}\n`);
    }
  };
}

export async function runTilesCommand(args: string[], ctx: TilesCommandContext): Promise<number> {
  try {
    pickSubcommand(args, GROUP);
    const { values } = parseCommand(args.slice(1), EXTRACT, ctx.err);
    const bbox = parseBbox(values.bbox);
    const maxZoom = parseMaxZoom(values['max-zoom']);
    const source = parseSource(values.source);
    const out = resolve(values.out ?? defaultOut(source, ctx.dataDir()));
    if (!out.toLowerCase().endsWith('.pmtiles'))
      throw usage(`--out must name a .pmtiles file (MAP_TILES serves those)`);
    const fetch = guardedFetch({
      allowLoopback: true,
      allowPrivateNetwork: values['allow-private-network'] === true,
      setting: '--allow-private-network',
    });
    ctx.err(`${EXTRACT.name}: ${source} → ${out} (at most ${MAX_TILES} tiles)\n`);
    try {
      const result = await extractTiles({
        source,
        bbox,
        maxZoom,
        out,
        fetch,
        onProgress: reporter(ctx),
      });
      ctx.out(
        `wrote ${result.path}: ${result.tiles} tiles, zoom ${result.minZoom}-${result.maxZoom}, ${mib(result.bytes)}\n` +
          `serve it with MAP_TILES=${result.path}\n`,
      );
      return 0;
    } finally {
      await fetch.close();
    }
  } catch (error) {
    if (error instanceof TilesExtractError) {
      ctx.err(`${EXTRACT.name}: ${error.message}\n`);
      return error.exitCode;
    }
    const errno = error as NodeJS.ErrnoException;
    if (typeof errno.code === 'string' && typeof errno.syscall === 'string') {
      // The disk, not the source: a full disk or a folder it may not write.
      ctx.err(`${EXTRACT.name}: ${errno.message}\n`);
      return 1;
    }
    const code = reportCliError(error, ctx);
    if (code === undefined) throw error;
    return code;
  }
}
