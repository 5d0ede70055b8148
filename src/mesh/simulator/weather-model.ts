/**
 * Simulated weather: realistic, deterministic functions of (seed, node, time).
 *
 * - Temperature follows the local solar day (coolest near dawn, warmest mid-afternoon; solar
 *   time from the longitude) on top of the season (from the latitude) and a slow weather drift.
 * - Relative humidity moves inversely to the day's temperature swing.
 * - Pressure drifts slowly around 1013 hPa, shared by the area as one weather system.
 * - Wind has a slowly varying mean with gusts minute to minute and a wandering direction.
 * - Gas resistance (BME680, kΩ) falls with humidity; PM rises with morning and evening traffic.
 * - Battery charges by day and discharges by night (solar nodes).
 *
 * Units are those the firmware puts on the air (EnvironmentMetrics: °C, %, hPa, m/s, degrees, kΩ).
 */
import type { SimNode } from './nodes.js';
import { smoothNoise, unitHash } from './random.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const YEAR_DAYS = 365.2425;

// Keys that separate the noise streams of different quantities.
const K_WEATHER = 1;
const K_CLOUD = 2;
const K_PRESSURE = 3;
const K_PRESSURE_FAST = 4;
const K_WIND = 5;
const K_GUST = 6;
const K_WIND_DIR = 7;
const K_WIND_DIR_FAST = 8;
const K_HUMIDITY = 9;
const K_GAS = 10;
const K_PM = 11;
const K_PM_SPIKE = 12;
const K_BATTERY = 13;
const K_SNR = 14;
const K_UTIL = 15;

export interface EnvironmentValues {
  temperature: number;
  relativeHumidity: number;
  /** hPa */
  barometricPressure: number;
  /** m/s */
  windSpeed: number;
  /** degrees, 0..359 */
  windDirection: number;
  /** kΩ */
  gasResistance: number;
}

export interface AirQualityValues {
  /** PM1.0 µg/m³ (AirQualityMetrics.pm10_standard). */
  pm10Standard: number;
  /** PM2.5 µg/m³. */
  pm25Standard: number;
  /** PM10 µg/m³ (AirQualityMetrics.pm100_standard). */
  pm100Standard: number;
}

export interface DeviceValues {
  batteryLevel: number;
  voltage: number;
  channelUtilization: number;
  airUtilTx: number;
  uptimeSeconds: number;
}

export interface ModelPlace {
  latitude: number;
  longitude: number;
}

/** Local solar hour 0..24 at the longitude. */
export function solarHour(timeMs: number, longitude: number): number {
  const h = timeMs / HOUR_MS + longitude / 15;
  return ((h % 24) + 24) % 24;
}

/** −1 at 06:00, +1 at 15:00 solar time: a fast morning rise, a slow evening fall. */
export function diurnalShape(hour: number): number {
  if (hour >= 6 && hour < 15) return -Math.cos((Math.PI * (hour - 6)) / 9);
  const sinceMax = (hour - 15 + 24) % 24;
  return Math.cos((Math.PI * sinceMax) / 15);
}

function seasonalShape(timeMs: number, latitude: number): number {
  const dayOfYear = (timeMs / DAY_MS) % YEAR_DAYS;
  // Warmest around day 200 (mid-July) in the north, mid-January in the south.
  return Math.cos((2 * Math.PI * (dayOfYear - 200)) / YEAR_DAYS) * (latitude >= 0 ? 1 : -1);
}

function round(value: number, decimals: number): number {
  const scale = 10 ** decimals;
  return Math.round(value * scale) / scale;
}

const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

export function environmentAt(
  seed: number,
  node: SimNode,
  place: ModelPlace,
  timeMs: number,
): EnvironmentValues {
  const lat = Math.abs(place.latitude);
  const hour = solarHour(timeMs, place.longitude);
  const annualMean = 27 - 0.4 * lat;
  const seasonalAmplitude = Math.min(12, 0.2 * lat);
  // Clear days swing wider than cloudy ones.
  const dailyAmplitude = 3 + 4 * smoothNoise(timeMs / DAY_MS, seed, K_CLOUD);
  const swing = dailyAmplitude * diurnalShape(hour);
  const weather = 6 * (smoothNoise(timeMs / (2 * DAY_MS), seed, K_WEATHER) - 0.5);
  const temperature =
    annualMean + seasonalAmplitude * seasonalShape(timeMs, place.latitude) + swing + weather;

  const humidityDrift = 24 * (smoothNoise(timeMs / (18 * HOUR_MS), seed, node.num, K_HUMIDITY) - 0.5);
  const relativeHumidity = clamp(68 - 3.2 * swing + humidityDrift, 12, 100);

  const pressure =
    1013 +
    22 * (smoothNoise(timeMs / (3 * DAY_MS), seed, K_PRESSURE) - 0.5) +
    4 * (smoothNoise(timeMs / (10 * HOUR_MS), seed, K_PRESSURE_FAST) - 0.5) +
    0.4 * (unitHash(seed, node.num, K_PRESSURE) - 0.5);

  const meanWind = 0.4 + 7 * smoothNoise(timeMs / (8 * HOUR_MS), seed, K_WIND) ** 1.5;
  const gust = 0.55 + 0.9 * unitHash(seed, node.num, K_GUST, Math.floor(timeMs / 60_000));
  const direction =
    230 +
    110 * (smoothNoise(timeMs / (6 * HOUR_MS), seed, K_WIND_DIR) - 0.5) * 2 +
    30 * (smoothNoise(timeMs / (20 * 60_000), seed, node.num, K_WIND_DIR_FAST) - 0.5);

  const gasBaseline = 60 + 180 * smoothNoise(timeMs / (5 * HOUR_MS), seed, node.num, K_GAS);
  const gasResistance = Math.max(5, gasBaseline * (1 - (relativeHumidity - 50) / 160));

  return {
    temperature: round(temperature + node.climateOffsetC, 2),
    relativeHumidity: round(relativeHumidity, 1),
    barometricPressure: round(pressure, 1),
    windSpeed: round(meanWind * gust, 1),
    windDirection: Math.round(((direction % 360) + 360) % 360) % 360,
    gasResistance: round(gasResistance, 1),
  };
}

export function airQualityAt(
  seed: number,
  node: SimNode,
  place: ModelPlace,
  timeMs: number,
): AirQualityValues {
  const hour = solarHour(timeMs, place.longitude);
  const traffic = Math.exp(-((hour - 8) ** 2) / 2) + 0.8 * Math.exp(-((hour - 19) ** 2) / 3);
  const background = 3 + 22 * smoothNoise(timeMs / (6 * HOUR_MS), seed, node.num, K_PM) ** 2;
  const spike = unitHash(seed, node.num, K_PM_SPIKE, Math.floor(timeMs / (5 * 60_000)));
  const pm25 = background + 9 * traffic + (spike > 0.95 ? 15 * spike : 0);
  const coarse = 1.25 + 0.5 * smoothNoise(timeMs / (4 * HOUR_MS), seed, node.num, K_PM_SPIKE);
  return {
    pm10Standard: Math.round(pm25 * 0.68),
    pm25Standard: Math.round(pm25),
    pm100Standard: Math.round(pm25 * coarse),
  };
}

/** `rebootMs`: how often the node reboots (its uptime starts again), each node at its own phase. */
export function deviceAt(
  seed: number,
  node: SimNode,
  place: ModelPlace,
  timeMs: number,
  rebootMs = 9 * DAY_MS,
): DeviceValues {
  const hour = solarHour(timeMs, place.longitude);
  // Solar nodes: fullest in the late afternoon, emptiest before dawn.
  const charge = Math.cos((2 * Math.PI * (hour - 17)) / 24);
  const offset = 16 * (unitHash(seed, node.num, K_BATTERY) - 0.5);
  const batteryLevel = Math.round(clamp(64 + 26 * charge + offset, 3, 100));
  const reboots = rebootMs;
  const uptimeMs = (timeMs + unitHash(seed, node.num, K_BATTERY, 1) * reboots) % reboots;
  return {
    batteryLevel,
    voltage: round(3.3 + (0.9 * batteryLevel) / 100, 3),
    channelUtilization: round(2 + 12 * smoothNoise(timeMs / HOUR_MS, seed, K_UTIL), 2),
    airUtilTx: round(0.1 + 1.6 * smoothNoise(timeMs / HOUR_MS, seed, node.num, K_UTIL), 2),
    uptimeSeconds: Math.floor(uptimeMs / 1000),
  };
}

/** Received SNR in quarter-dB steps, as the firmware reports it. */
export function snrAt(seed: number, node: SimNode, timeMs: number): number {
  const fade = 6 * (unitHash(seed, node.num, K_SNR, Math.floor(timeMs / 60_000)) - 0.5);
  return Math.round((node.snrBaseDb + fade) * 4) / 4;
}

export function rssiAt(snr: number): number {
  return Math.round(-118 + 2.6 * (snr + 20));
}
