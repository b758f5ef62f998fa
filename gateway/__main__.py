import sys

from gateway.server.cli import main

sys.exit(main())
