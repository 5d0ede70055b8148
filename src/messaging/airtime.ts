/**
 * LoRa time on air (Semtech AN1200.13) of a text packet, for pacing our sends. The modem is
 * Meshtastic's default LONG_FAST preset: SF 11, 250 kHz, coding rate 4/5, a 16-symbol preamble,
 * explicit header, CRC on. A packet carries the 16-byte Meshtastic header, then the encrypted
 * Data protobuf: portnum and payload tags and lengths (~4 bytes) around the text.
 */

export interface LoraModem {
  spreadingFactor: number;
  bandwidthHz: number;
  /** 1 for 4/5 … 4 for 4/8. */
  codingRate: number;
  preambleSymbols: number;
}

export const LONG_FAST: LoraModem = {
  spreadingFactor: 11,
  bandwidthHz: 250_000,
  codingRate: 1,
  preambleSymbols: 16,
};

const MESHTASTIC_HEADER_BYTES = 16;
const DATA_OVERHEAD_BYTES = 4;

export function timeOnAirMs(payloadBytes: number, modem: LoraModem = LONG_FAST): number {
  const sf = modem.spreadingFactor;
  const symbolMs = (2 ** sf / modem.bandwidthHz) * 1000;
  const lowDataRateOptimize = symbolMs > 16 ? 1 : 0;
  const numerator = 8 * payloadBytes - 4 * sf + 28 + 16;
  const payloadSymbols =
    8 + Math.max(Math.ceil(numerator / (4 * (sf - 2 * lowDataRateOptimize))) * (modem.codingRate + 4), 0);
  return (modem.preambleSymbols + 4.25 + payloadSymbols) * symbolMs;
}

/** Airtime of a text of `textBytes` UTF-8 bytes as one Meshtastic packet. */
export function textAirtimeMs(textBytes: number, modem: LoraModem = LONG_FAST): number {
  return timeOnAirMs(MESHTASTIC_HEADER_BYTES + DATA_OVERHEAD_BYTES + textBytes, modem);
}

/** How long to keep the transmitter free after a send so our share of airtime stays at `percent`. */
export function pauseAfterSendMs(airtimeMs: number, percent: number): number {
  if (percent >= 100) return 0;
  return airtimeMs * (100 / percent - 1);
}
