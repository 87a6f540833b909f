import { describeQemuContract } from './qemu-contract.js';

describeQemuContract('microbit');
