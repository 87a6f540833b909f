import { describeQemuContract } from './qemu-contract.js';

describeQemuContract('mps2-an385');
