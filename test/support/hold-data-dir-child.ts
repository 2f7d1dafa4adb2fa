/** Opens a PGlite data folder, says so, and holds it until killed (the single-process test's other process). */
import { openDatabase } from '../../src/store/open-database.ts';

const database = await openDatabase({ dataDir: process.argv[2]! });
process.stdout.write(`holding ${database.location}\n`);
setInterval(() => {}, 60_000);
