import { MockBackend } from '../../backends/mock/mock-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { EM_AVR } from '../../core/elf.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';
import { describeBackendContract } from './backend-contract.js';

const board = loadBoardCatalog().find((b) => b.id === 'pico')!;
const section = (text: string) => [{ name: '.hilbench.mock', data: new TextEncoder().encode(text) }];

describeBackendContract('mock', {
  backend: () => new MockBackend(),
  board,
  hello: firmwareImage(makeElf({ segments: [{ paddr: 0x10000000, data: new Uint8Array(64) }] })),
  helloPattern: /hilbench-mock: reset pico\r\n[^]*tick 1\r\n/,
  helloWithinSeconds: 0.2,
  wrongArchitecture: firmwareImage(makeElf({ machine: EM_AVR })),
  exits: { image: firmwareImage(makeElf({ sections: section('fault=exit') })), exitCode: 3 },
  crashes: firmwareImage(makeElf({ sections: section('fault=crash') })),
});
