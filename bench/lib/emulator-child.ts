/**
 * Runs the provider emulator in its own process for a benchmark, so the process being measured
 * spends no CPU serving its own upstream (a real provider is never in-process either). The profile
 * comes as JSON in `BENCH_EMULATOR_PROFILE`; the URLs go to stdout as one JSON line; the emulator
 * closes when stdin ends (the parent exited or closed it).
 */
import { startEmulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorProfile } from '../../src/emulator/emulator-types.ts';

const profile = JSON.parse(process.env.BENCH_EMULATOR_PROFILE ?? '{}') as EmulatorProfile;
const emu = await startEmulator({ profile });
process.stdout.write(`${JSON.stringify({ controlURL: emu.controlURL, urls: emu.baseURLs() })}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void emu.close().then(() => process.exit(0));
});
process.on('SIGTERM', () => {
  void emu.close().then(() => process.exit(0));
});
