/**
 * The hub's own share of airtime: the time on air (src/messaging/airtime.ts, the formula the send
 * queue paces with) of every text the hub sent, each attempt, over a sliding hour; read beside
 * the budget (MESSAGE_AIRTIME_PERCENT) and the radio's own channel figures.
 */
import { textAirtimeMs } from '../messaging/airtime.js';

export const AIRTIME_WINDOW_MS = 3_600_000;
/** Sends remembered at most (far beyond what any budget lets through in an hour). */
const MAX_SENDS = 20_000;

export class AirtimeTracker {
  private readonly at: number[] = [];
  private readonly ms: number[] = [];

  /** A text of `textBytes` UTF-8 bytes went to the radio at `now`. */
  sent(textBytes: number, now: number): void {
    this.prune(now);
    if (this.at.length >= MAX_SENDS) {
      this.at.shift();
      this.ms.shift();
    }
    this.at.push(now);
    this.ms.push(textAirtimeMs(textBytes));
  }

  /** Sends and their share of the window (percent) up to `now`. */
  used(now: number): { packets: number; percent: number } {
    this.prune(now);
    let total = 0;
    for (const ms of this.ms) total += ms;
    return { packets: this.at.length, percent: Math.round((total / AIRTIME_WINDOW_MS) * 100 * 1e4) / 1e4 };
  }

  private prune(now: number): void {
    let drop = 0;
    while (drop < this.at.length && this.at[drop]! <= now - AIRTIME_WINDOW_MS) drop++;
    if (drop > 0) {
      this.at.splice(0, drop);
      this.ms.splice(0, drop);
    }
  }
}
