/**
 * The radio's secrets, kept from mesh API clients (README "What an app on the hub's radio can
 * see"): the node's PKI private key and the admin keys (Config.security `private_key`,
 * `admin_key`), the WiFi password (Config.network `wifi_psk`) and the MQTT module's password
 * (ModuleConfig.mqtt `password`). They are blanked wherever a client could read them: the config
 * and module config of the handshake, and ADMIN_APP packets (`get_config_response`,
 * `get_module_config_response`, and a client's `set_config`/`set_module_config` echoed to the
 * others). Channel keys are not among them: see the README for why.
 *
 * An app saves a whole config section at a time, blanks included: with MESH_API_ADMIN=true a
 * blank secret in a client's `set_config`/`set_module_config` is filled back from the radio's
 * own config before it goes to the radio, so saving the section does not wipe the key.
 */
import { clone, fromBinary, toBinary } from '@bufbuild/protobuf';
import { Admin, Config, Mesh, ModuleConfig, Portnums } from '@meshtastic/protobufs';

type Section = Config.Config['payloadVariant'];
type ModuleSection = ModuleConfig.ModuleConfig['payloadVariant'];

/** True when the section carries a secret (it is then blanked, in place). */
function blankConfig(section: Section): boolean {
  if (section.case === 'security') {
    const s = section.value;
    if (s.privateKey.length === 0 && s.adminKey.length === 0) return false;
    s.privateKey = new Uint8Array(0);
    s.adminKey = [];
    return true;
  }
  if (section.case === 'network' && section.value.wifiPsk !== '') {
    section.value.wifiPsk = '';
    return true;
  }
  return false;
}

function blankModuleConfig(section: ModuleSection): boolean {
  if (section.case === 'mqtt' && section.value.password !== '') {
    section.value.password = '';
    return true;
  }
  return false;
}

/** A Config without its secrets (the same object when it has none). */
export function configWithoutSecrets(config: Config.Config): Config.Config {
  const copy = clone(Config.ConfigSchema, config);
  return blankConfig(copy.payloadVariant) ? copy : config;
}

/** A ModuleConfig without its secrets (the same object when it has none). */
export function moduleConfigWithoutSecrets(config: ModuleConfig.ModuleConfig): ModuleConfig.ModuleConfig {
  const copy = clone(ModuleConfig.ModuleConfigSchema, config);
  return blankModuleConfig(copy.payloadVariant) ? copy : config;
}

function adminOf(packet: Mesh.MeshPacket): Admin.AdminMessage | undefined {
  const variant = packet.payloadVariant;
  if (variant.case !== 'decoded' || variant.value.portnum !== Portnums.PortNum.ADMIN_APP) return undefined;
  try {
    return fromBinary(Admin.AdminMessageSchema, variant.value.payload);
  } catch {
    return undefined;
  }
}

function withAdmin(packet: Mesh.MeshPacket, admin: Admin.AdminMessage): Mesh.MeshPacket {
  const copy = clone(Mesh.MeshPacketSchema, packet);
  if (copy.payloadVariant.case === 'decoded')
    copy.payloadVariant.value.payload = toBinary(Admin.AdminMessageSchema, admin);
  return copy;
}

/**
 * A packet as a client may see it: an ADMIN_APP packet carrying a config or module config has
 * its secrets blanked (a copy); any other packet is returned as it is. Only ADMIN_APP payloads
 * are decoded.
 */
export function packetWithoutSecrets(packet: Mesh.MeshPacket): Mesh.MeshPacket {
  const admin = adminOf(packet);
  if (!admin) return packet;
  const v = admin.payloadVariant;
  let blanked = false;
  if (v.case === 'getConfigResponse' || v.case === 'setConfig') blanked = blankConfig(v.value.payloadVariant);
  else if (v.case === 'getModuleConfigResponse' || v.case === 'setModuleConfig')
    blanked = blankModuleConfig(v.value.payloadVariant);
  return blanked ? withAdmin(packet, admin) : packet;
}

/** The radio's own config sections, as the hub's mirror of it holds them. */
export interface RadioSecrets {
  config(section: 'security' | 'network'): Section | undefined;
  moduleConfig(section: 'mqtt'): ModuleSection | undefined;
}

/**
 * A client's admin write with every blanked secret filled back from the radio's own config
 * (see above); the packet itself when nothing was blank.
 */
export function restoreSecrets(packet: Mesh.MeshPacket, radio: RadioSecrets): Mesh.MeshPacket {
  const admin = adminOf(packet);
  if (!admin) return packet;
  const v = admin.payloadVariant;
  let filled = false;
  if (v.case === 'setConfig') {
    const section = v.value.payloadVariant;
    if (section.case === 'security') {
      const own = radio.config('security');
      if (own?.case === 'security') {
        if (section.value.privateKey.length === 0 && own.value.privateKey.length > 0) {
          section.value.privateKey = own.value.privateKey;
          filled = true;
        }
        if (section.value.adminKey.length === 0 && own.value.adminKey.length > 0) {
          section.value.adminKey = [...own.value.adminKey];
          filled = true;
        }
      }
    } else if (section.case === 'network' && section.value.wifiPsk === '') {
      const own = radio.config('network');
      if (own?.case === 'network' && own.value.wifiPsk !== '') {
        section.value.wifiPsk = own.value.wifiPsk;
        filled = true;
      }
    }
  } else if (v.case === 'setModuleConfig') {
    const section = v.value.payloadVariant;
    const own = radio.moduleConfig('mqtt');
    if (
      section.case === 'mqtt' &&
      section.value.password === '' &&
      own?.case === 'mqtt' &&
      own.value.password
    ) {
      section.value.password = own.value.password;
      filled = true;
    }
  }
  return filled ? withAdmin(packet, admin) : packet;
}
