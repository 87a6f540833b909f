/**
 * The backends a board file may name, apart from the zod schema so the CLI's help can list them
 * without loading zod (`hilbench --help` loads only what it prints).
 */
export const backendNames = ['mock', 'sim', 'qemu', 'renode', 'probe'] as const;
export type BackendName = (typeof backendNames)[number];
