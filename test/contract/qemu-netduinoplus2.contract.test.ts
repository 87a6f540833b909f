import { describeQemuContract } from './qemu-contract.js';

describeQemuContract('netduinoplus2');
