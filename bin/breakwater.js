#!/usr/bin/env node
// Entry point of the `breakwater` command. The sources are TypeScript; tsx's loader runs them as they are,
// so `npm ci` is the whole install (no build step).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
