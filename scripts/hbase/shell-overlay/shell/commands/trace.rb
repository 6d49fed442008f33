# The HBase shell served here (2.4.17) runs on HBase 2.6 jars, where HTrace is
# gone (2.6 traces with OpenTelemetry). This file takes the place of the
# shell's `trace` command so that the rest of the shell loads; it only says
# that tracing is not available.
module Shell
  module Commands
    class Trace < Command
      def help
        'Tracing from the shell is not available with this HBase (2.6 uses OpenTelemetry).'
      end

      def command(*_args)
        puts help
        false
      end
    end
  end
end
