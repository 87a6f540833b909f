/** The stand-in's version line, as `renode --version` and the monitor's `version` print it. */
export const VERSION = 'Renode, version 1.16.1.0 (standin-hilbench)';

/** The command line options the stand-in reads (Renode's src/UI/Options.cs names). */
export interface StandinOptions {
  console: boolean;
  plain: boolean;
  hideLog: boolean;
  port: number | undefined;
  pidFile: string | undefined;
  execute: string[];
  script: string | undefined;
}

/** Parses Renode's command line; `--version` and usage errors end the process, as in Renode. */
export function parseArgs(argv: string[]): StandinOptions {
  const options: StandinOptions = { console: false, plain: false, hideLog: false, port: undefined, pidFile: undefined, execute: [], script: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) usage(`Option '${arg}' requires a value.`);
      return v;
    };
    switch (arg) {
      case '--console':
        options.console = true;
        break;
      case '-p':
      case '--plain':
        options.plain = true;
        break;
      case '--hide-log':
        options.hideLog = true;
        break;
      case '--disable-xwt':
      case '--disable-gui':
      case '--hide-monitor':
      case '--hide-analyzers':
        break;
      case '-P':
      case '--port':
        options.port = Number(value());
        break;
      case '--pid-file':
        options.pidFile = value();
        break;
      case '-e':
      case '--execute':
        options.execute.push(value());
        break;
      case '-v':
      case '--version':
        process.stdout.write(`${VERSION}\n`);
        process.exit(0);
        break;
      default:
        if (arg.startsWith('-')) usage(`Unknown option: ${arg}`);
        options.script = arg;
    }
  }
  return options;
}

function usage(message: string): never {
  process.stderr.write(`${message}\nUsage: renode [options] [file]\n`);
  process.exit(1);
}
