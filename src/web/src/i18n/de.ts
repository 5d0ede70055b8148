import type { Catalogue } from './types.js';

export const de: Catalogue = {
  common: {
    cancel: 'X',
  },
};
