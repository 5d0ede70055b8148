/**
 * A site as the upstream lists it (`GET /api/v1/sites`, sync/upstream/routes/sites-routes.ts;
 * docs/sync.md): how its sync stands. Here, below both, because the upstream writes it
 * (sync/upstream/weather/pg-reads.ts) and the web app reads it (src/web), which takes server code
 * only from src/domain and schemas.ts files.
 */
export interface SiteJson {
  site_id: string;
  name: string | null;
  /** Last signed request of any kind from the site (ISO 8601 Z), null when it never connected. */
  last_contact_at: string | null;
  /**
   * When the site last said it was stopping (it closed its downlink cleanly), null when never;
   * it is offline from then until a later `last_contact_at`.
   */
  stopped_at: string | null;
  /** Last batch applied (upstream clock, ISO 8601 Z), null when never. */
  last_batch_at: string | null;
  /**
   * How far the site's data is behind: seconds from the newest record's own time (site clock)
   * to now; null before the first record.
   */
  lag_s: number | null;
  acked_seq: number;
  node_count: number;
  revoked: boolean;
}
