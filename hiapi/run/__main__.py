import sys

from hiapi.run.cli import main

sys.exit(main())
