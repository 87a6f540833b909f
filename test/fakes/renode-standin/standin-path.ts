import path from 'node:path';

/** The stand-in's executable: pass it as `renodePath` (or HILBENCH_RENODE) where Renode is not installed. */
export const renodeStandinPath = path.join(import.meta.dirname, 'renode');
