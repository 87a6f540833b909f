import { describeQemuContract } from './qemu-contract.js';

describeQemuContract('stm32vldiscovery');
