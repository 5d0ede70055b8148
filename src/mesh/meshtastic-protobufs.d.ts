// @meshtastic/protobufs 2.7.18 names `dist/mod.d.ts` in its package.json but ships the
// declarations as a hashed chunk only; point the module at that chunk until upstream fixes it.
declare module '@meshtastic/protobufs' {
  export * from '@meshtastic/protobufs/dist/mod-D6ytgKaP.js';
}
