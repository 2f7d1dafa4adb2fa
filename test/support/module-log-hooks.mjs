// Module hooks that append every resolved module URL to the file named by env BW_MODULE_LOG: a test sees which
// packages a command loads. Registered by module-log-register.mjs (`node --import`).
import { appendFileSync } from 'node:fs';

export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  if (process.env.BW_MODULE_LOG) appendFileSync(process.env.BW_MODULE_LOG, `${result.url}\n`);
  return result;
}
