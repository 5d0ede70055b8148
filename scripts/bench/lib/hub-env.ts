/** The settings of a hub a benchmark (or scripts/screenshot.ts) runs in its own process. */

/**
 * A hub's data in `dataDir`, HTTP on loopback port `httpPort` (0, the default: a free one the hub
 * picks), the mesh API and MQTT on free loopback ports (tests add the rest themselves).
 */
export const loopbackListeners = (dataDir: string, httpPort = 0): Record<string, string> => ({
  DATA_DIR: dataDir,
  HTTP_HOST: '127.0.0.1',
  HTTP_PORT: String(httpPort),
  MESH_API_PORT: '0',
  MQTT_PORT: '0',
});

/**
 * A hub on loopback with ephemeral HTTP and MQTT ports, no radio and no logs, its data in
 * `dataDir`; `extra` adds or overrides settings.
 */
export function loopbackHubEnv(dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...loopbackListeners(dataDir),
    RADIO: 'none',
    LOG_LEVEL: 'silent',
    ...extra,
  };
}

/** loopbackHubEnv with the audit plugin, which does not fetch from Microsoft on start. */
export function auditHubEnv(dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return loopbackHubEnv(dataDir, { PLUGINS: 'audit', AUDIT_FETCH_ON_START: 'false', ...extra });
}
