import type { Catalogue } from './types.js';

export const pl: Catalogue = {
  common: {
    cancel: 'X',
  },
};
