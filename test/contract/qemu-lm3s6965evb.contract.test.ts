import { describeQemuContract } from './qemu-contract.js';

describeQemuContract('lm3s6965evb');
