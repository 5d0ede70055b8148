import type { Catalogue } from './types.js';

export const es: Catalogue = {
  common: {
    cancel: 'X',
  },
};
