/**
 * Which client packets would change a radio: ADMIN_APP messages other than reads. The hub owns
 * the site radio; a phone on the LAN must not reconfigure it (or a remote node through it) by
 * accident, so these are refused unless MESH_API_ADMIN=true (issue 16).
 */
import { fromBinary } from '@bufbuild/protobuf';
import { Admin, type Mesh, Portnums } from '@meshtastic/protobufs';

export type AdminVerdict =
  | { kind: 'not-admin' }
  /** A read (AdminMessage get_*_request): harmless, passed on. */
  | { kind: 'read'; variant: string }
  /** set_config, set_channel, set_owner, reboot, factory reset and every other write. */
  | { kind: 'write'; variant: string }
  | { kind: 'malformed' };

export function classifyAdmin(packet: Mesh.MeshPacket): AdminVerdict {
  const variant = packet.payloadVariant;
  if (variant.case !== 'decoded' || variant.value.portnum !== Portnums.PortNum.ADMIN_APP)
    return { kind: 'not-admin' };
  let message: Admin.AdminMessage;
  try {
    message = fromBinary(Admin.AdminMessageSchema, variant.value.payload);
  } catch {
    return { kind: 'malformed' };
  }
  const name = message.payloadVariant.case ?? 'unknown';
  // Only requests for information are reads; anything new in the protobufs counts as a write.
  return /^get[A-Za-z]*Request$/.test(name)
    ? { kind: 'read', variant: name }
    : { kind: 'write', variant: name };
}
