// `node --import ./module-log-register.mjs`: logs every resolved module (see module-log-hooks.mjs).
import { register } from 'node:module';

register('./module-log-hooks.mjs', import.meta.url);
